import Foundation
import Logging

/// Tells the gateway (`syncgate run`) which files in its sources changed and are ready to send.
///
/// Every folder of every source is watched with inotify (recursively; a folder excluded is neither descended nor
/// watched), from a thread of its own. A file is reported in ``events`` once it has not changed for `settle`: each
/// event about it (written, closed, renamed in, linked, its modification time set) starts the wait again, and when
/// it falls due its size and modification time are taken once more and compared, so half-written files are not
/// sent (a file just created empty waits for its first write, however long). The wait ends on a grid of a tenth of
/// `settle` (at most 250 ms), so a file is reported between `settle` and `settle` plus that step after its last
/// change, and files changed together come in one batch. A folder created or moved in is watched and its files
/// (perhaps written before its watch was set) are reported the same way. A file renamed away before it settles is
/// forgotten: a temporary name is never reported while it is written, whether or not the excludes name it, unless
/// it stays unchanged for `settle`.
///
/// When the watches cannot say exactly what changed, a ``WatchEvent/rescan(reason:)`` asks for a walk of every
/// source instead: the kernel's event queue overflowed, a source's folder was removed, moved or replaced (a
/// missing one is looked for every second, and once there its files are reported), a watch was dropped, the
/// inotify watch limit was reached (logged with the sysctl that raises it; a rescan then comes every
/// `limitRetry`, until every folder has its watch again), or more than `pendingLimit` files changed at once.
///
/// Only changes after the watches are set are reported (``isWatching``): the gateway walks its sources once after
/// that. Deletions are not reported (nothing is deleted anywhere). Not seen by any watch, hence left to rescans and
/// the gateway's `rescan_interval`: writes through a link to a file outside the source, changes to a source
/// folder's parents other than its own folder being replaced (checked every second), network file systems'
/// changes made by other machines.
///
/// Linux only (inotify); elsewhere ``init(sources:settle:pendingLimit:logger:)`` throws.
public final class SourceWatcher: Sendable {
    /// What was found: batches of settled files and rescans, for one consumer. What the consumer has not taken yet
    /// is merged (files as a set, rescans into one, which also stands for the files). Ends after ``stop()``; the
    /// consumer's task cancelled while it waits for the next event stops the watcher too (within a second).
    public let events: AsyncStream<WatchEvent>
    private let outbox: WatchOutbox
    #if os(Linux)
    private let loop: WatchLoop
    #endif

    /// Starts watching `sources` (their folders are watched in the background; see ``isWatching``).
    /// - Parameters:
    ///   - settle: how long a file must stay unchanged before it is reported (0: as soon as it is written).
    ///   - pendingLimit: files kept settling, and kept ready for a consumer that has not asked yet, at most;
    ///     beyond either, one rescan is asked for instead, so memory stays flat whatever the number of events.
    /// - Throws: ``WatchError`` when inotify cannot be started (the message names the limit to raise).
    public convenience init(sources: [SourceConfig], settle: Duration, pendingLimit: Int = 100_000, logger: Logger) throws {
        try self.init(sources: sources, settle: settle, pendingLimit: pendingLimit, watchLimit: nil,
                      limitRetry: .seconds(60), rootCheck: .seconds(1), logger: logger)
    }

    /// `watchLimit`: watches held at most (as if the kernel's limit were there); `limitRetry`: how often to try
    /// again over the watch limit; `rootCheck`: how often source folders are looked for and checked.
    init(sources: [SourceConfig], settle: Duration, pendingLimit: Int, watchLimit: Int?, limitRetry: Duration,
         rootCheck: Duration, logger: Logger) throws {
        precondition(pendingLimit > 0, "pendingLimit must be positive")
        let outbox = WatchOutbox(limit: pendingLimit)
        self.outbox = outbox
        events = AsyncStream(unfolding: { await outbox.next() })
        #if os(Linux)
        let options = WatchLoop.Options(settle: max(settle, .zero), pendingLimit: pendingLimit, watchLimit: watchLimit,
                                        limitRetry: limitRetry, rootCheck: rootCheck)
        loop = try WatchLoop(sources: sources, options: options, outbox: outbox, logger: logger)
        loop.start()
        #else
        throw WatchError(message: "watching sources needs Linux (inotify); use `syncgate sync` here")
        #endif
    }

    deinit {
        stop()
    }

    /// Whether every source's folders are watched (set once, soon after start; until ``stop()``): what a change
    /// made from then on is reported. A source whose folder is missing does not hold this up.
    public var isWatching: Bool {
        #if os(Linux)
        loop.isReady
        #else
        false
        #endif
    }

    /// Files changed and not handed over yet: settling, or settled and waiting for the consumer.
    public var queueDepth: Int {
        #if os(Linux)
        loop.settling + outbox.count
        #else
        0
        #endif
    }

    /// Stops watching: the thread ends (within a poll's wake-up), the watches go, ``events`` ends. Idempotent.
    public func stop() {
        #if os(Linux)
        loop.stop()
        #endif
        outbox.finish()
    }

    #if os(Linux)
    /// Tests: stop reading events (they wait in the kernel's queue, which may overflow), or read them again.
    func pauseReading(_ paused: Bool) { loop.pauseReading(paused) }

    /// Benchmarks: inotify events read so far.
    var eventsRead: Int { loop.eventsRead }
    #endif
}
