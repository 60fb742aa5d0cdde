#if os(Linux)
import Foundation
import Glibc
import Logging
import Synchronization

/// The thread behind a ``SourceWatcher``: sets a watch on every folder of every source, then reads inotify events,
/// keeps the watches in step with folders created, moved and removed, lets changed files settle, and leaves what
/// is ready (or a rescan) in the ``WatchOutbox``. Everything but the few fields in `shared` belongs to its thread.
///
/// Rules of the walk are the same as a sync's (``SourceScanner``): a folder the excludes match is not descended
/// (nor watched), a file is reported only when include/exclude select it, links only with `follow_symlinks` (never
/// in a loop), FIFOs, sockets, devices and names that are not UTF-8 passed over with a warning in the log.
///
/// Unchecked: its many fields are the watch thread's alone (the one thread a blocking `poll` needs); what other
/// threads ask and tell is in `shared`, behind a lock, and `exit` is a `DispatchGroup`.
final class WatchLoop: @unchecked Sendable {
    struct Options {
        var settle: Duration
        /// Files settling at most; beyond, one rescan instead.
        var pendingLimit: Int
        /// Watches held at most, below the kernel's own limit (tests play the kernel's `ENOSPC` with it).
        var watchLimit: Int?
        /// While folders go unwatched for the watch limit, how often to try again (and ask for a rescan).
        var limitRetry: Duration
        /// How often a missing source folder is looked for, and a present one checked to be the same folder.
        var rootCheck: Duration
    }

    /// The state of a source's own folder.
    enum Root {
        /// Watched, with its identity (device, inode).
        case watched(device: UInt64, inode: UInt64)
        /// Missing (or not a folder): looked for every `rootCheck`.
        case missing
    }

    /// What a path in a source is, for settling.
    enum Kind {
        case file(SettleQueue.Stamp)
        case folder
        case gone
        case skipped(String)
    }

    /// Asked of (and told to) the thread from others.
    struct Shared {
        var stopRequested = false
        var readingPaused = false
        var ready = false
        var exited = false
        var settlingCount = 0
        var eventCount = 0
        /// The watch thread, once it runs.
        var thread: pthread_t?
    }

    let shared = Mutex(Shared())
    /// Entered when the thread starts, left when it has ended: ``stop()`` waits on it.
    private let exit = DispatchGroup()

    // The thread's own.
    let sources: [SourceConfig]
    let options: Options
    let inotify: InotifyWatch
    let outbox: WatchOutbox
    let logger: Logger
    var folders = WatchedFolders()
    var pending: SettleQueue
    var roots: [Root]
    /// Descriptors this loop removed: their `IN_IGNORED` is expected.
    var removedByUs: Set<Int32> = []
    /// Files armed since their stamp was last taken (stamped once the events read together are handled).
    var toStamp: [SettleQueue.Key] = []
    /// Files created since the last stamps, not armed yet: see ``armCreated()``.
    var created: [SettleQueue.Key] = []
    /// Files deleted or renamed away since the last round: handed over as they are (nothing to settle).
    var removed: [FileKey] = []
    /// Rescans to ask for once this round's watches are set (so the walk that answers sees what they miss).
    var rescanReasons: [String] = []
    var overflowed = false
    /// Some folder could not be watched for the watch limit during this walk / since the last retry.
    var limitHit = false
    var limited = false
    var nextLimitRetry: Int64 = 0
    var nextRootCheck: Int64 = 0
    var now: Int64 = 0

    init(sources: [SourceConfig], options: Options, outbox: WatchOutbox, logger: Logger) throws {
        self.sources = sources
        self.options = options
        self.outbox = outbox
        self.logger = logger
        inotify = try InotifyWatch()
        pending = SettleQueue(settle: WatchLoop.nanoseconds(options.settle), limit: options.pendingLimit)
        roots = Array(repeating: .missing, count: sources.count)
    }

    func start() {
        let thread = Thread { [self] in
            defer { exit.leave() }
            shared.withLock { $0.thread = pthread_self() }
            run()
        }
        thread.name = "syncgate.watch"
        exit.enter()
        thread.start()
    }

    // MARK: asked from other threads

    var isReady: Bool { shared.withLock { $0.ready && !$0.exited } }
    var settling: Int { shared.withLock { $0.settlingCount } }
    var eventsRead: Int { shared.withLock { $0.eventCount } }

    /// Asks the thread to end, and (unless called on it) waits until it has (at once when it never started).
    func stop() {
        let onThread = shared.withLock { shared in
            shared.stopRequested = true
            return shared.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
        }
        inotify.wake()
        guard !onThread else { return }
        exit.wait()
    }

    /// Tests: leave the events in the kernel's queue (as a busy reader would) until resumed.
    func pauseReading(_ paused: Bool) {
        shared.withLock { $0.readingPaused = paused }
        inotify.wake()
    }

    // MARK: the thread

    var shouldStop: Bool { shared.withLock { $0.stopRequested } }

    func run() {
        defer {
            outbox.finish()
            inotify.close()
            shared.withLock { $0.exited = true }
        }
        now = WatchLoop.monotonic()
        for index in sources.indices where !shouldStop {
            installRoot(index, report: false)
        }
        flushRescans()
        shared.withLock { $0.ready = true }
        nextRootCheck = now + WatchLoop.nanoseconds(options.rootCheck)
        logger.debug("watching", metadata: ["sources": .stringConvertible(sources.count), "folders": .stringConvertible(folders.watchCount)])

        while !shouldStop && !outbox.isFinished {
            now = WatchLoop.monotonic()
            var until = nextRootCheck
            if let due = pending.nextDue { until = min(until, due) }
            if limited { until = min(until, nextLimitRetry) }
            let paused = shared.withLock { $0.readingPaused }
            let milliseconds = Int32(clamping: max(0, (until - now + 999_999) / 1_000_000))
            let readable = inotify.wait(milliseconds: milliseconds, events: !paused)
            if shouldStop { break }
            now = WatchLoop.monotonic()
            if readable { readEvents() }
            if overflowed { recoverFromOverflow() }
            stampArmed()
            now = WatchLoop.monotonic()
            if now >= nextRootCheck {
                checkRoots()
                nextRootCheck = now + WatchLoop.nanoseconds(options.rootCheck)
            }
            if limited && now >= nextLimitRetry { retryLimit() }
            settleDue()
            flushRescans()
            let count = pending.count
            shared.withLock { $0.settlingCount = count }
        }
    }

    /// Reads what the kernel queued (a bounded amount per round, so settling and stop are not starved).
    func readEvents() {
        var count = 0
        _ = inotify.read(maxBytes: 1 << 20) { wd, mask, _, name in
            count += 1
            handle(wd: wd, mask: mask, name: name)
        }
        shared.withLock { $0.eventCount += count }
    }

    func handle(wd: Int32, mask: UInt32, name: UnsafeRawBufferPointer) {
        if mask & InotifyWatch.queueOverflow != 0 {
            overflowed = true
            return
        }
        if mask & InotifyWatch.ignored != 0 {
            if removedByUs.remove(wd) != nil { return }
            // Still standing for places: the kernel dropped a watch nobody removed (its folder's file system went,
            // or it was deleted without the `IN_DELETE_SELF` being read first).
            let lost = folders.forget(wd)
            if !lost.isEmpty { lose(lost, why: "its watch was dropped") }
            return
        }
        guard !removedByUs.contains(wd) else { return }  // queued before the watch was removed: stale paths
        let places = folders.places(of: wd)
        guard !places.isEmpty else { return }
        if mask & InotifyWatch.deleteSelf != 0 {
            // A folder deleted holds nothing to send; its own folder gone, a source is lost.
            _ = folders.forget(wd)
            let roots = places.filter { $0.isRoot }
            if !roots.isEmpty { lose(roots, why: "was deleted") }
            return
        }
        if mask & (InotifyWatch.moveSelf | InotifyWatch.unmount) != 0 {
            // A folder renamed is unwatched when its parent's `IN_MOVED_FROM` is read, before this; still watched
            // here, it is a source's own folder, or a rename whose other half was not seen.
            lose(places, why: mask & InotifyWatch.unmount != 0 ? "was unmounted" : "was moved or renamed")
            return
        }
        guard !name.isEmpty else { return }
        for place in places {
            handleEntry(in: place, name: name, mask: mask)
        }
    }

    /// An event about an entry (`name`) of a watched folder.
    func handleEntry(in place: WatchedFolders.Place, name raw: UnsafeRawBufferPointer, mask: UInt32) {
        let source = sources[place.source]
        let folder = place.path.value
        guard let name = String(validating: raw, as: UTF8.self) else {
            if mask & (InotifyWatch.create | InotifyWatch.movedTo) != 0 {
                let shown = TerminalText.undecodable(raw)
                warn(source, folder.isEmpty ? shown : folder + "/" + shown, "skipped: the name is not valid UTF-8")
            }
            return
        }
        let relative = folder.isEmpty ? name : folder + "/" + name
        if mask & InotifyWatch.isDirectory != 0 {
            if mask & InotifyWatch.movedFrom != 0 {
                unwatchTree(place.source, relative)
            } else if mask & (InotifyWatch.create | InotifyWatch.movedTo) != 0 {
                // A folder created or moved in: its files may have been written before its watch was set.
                if !source.skipsFolder(relative) { watchTree(place.source, relative, report: true) }
            }
            return
        }
        let key = SettleQueue.Key(source: place.source, path: relative)
        if mask & (InotifyWatch.movedFrom | InotifyWatch.delete) != 0 {
            // Deleted, or renamed away (its new name, if in a source, has an event of its own): the planner marks its
            // rows removed once it finds it gone.
            pending.remove(key)
            if source.selects(relative) { removed.append(FileKey(source: source.name, path: relative)) }
            return
        }
        if source.selects(relative) {
            if mask & InotifyWatch.create != 0 && !pending.contains(key) {
                created.append(key)  // looked at with the stamps: a file just opened to be written waits for its writes
            } else {
                arm(key)
            }
        } else if source.followSymlinks, mask & (InotifyWatch.create | InotifyWatch.movedTo) != 0,
                  !source.skipsFolder(relative) {
            // Maybe a link to a folder (the excludes judge it as a folder, as a walk does).
            var st = stat()
            if stat(path(place.source, relative), &st) == 0, st.st_mode & S_IFMT == S_IFDIR {
                watchTree(place.source, relative, report: true)
            }
        }
    }

    func arm(_ key: SettleQueue.Key) {
        if pending.arm(key, now: now) {
            toStamp.append(key)
            return
        }
        let limit = pending.limit
        pending.removeAll()
        toStamp = []
        created = []
        logger.warning("more than \(limit) files changed at once; asking for a rescan instead of settling each")
        askRescan("more than \(limit) files changed at once")
    }

    /// Files created (`IN_CREATE`) this round. An empty file with one link was just opened to be written: it is
    /// armed by its writes and its close (`IN_MODIFY`, `IN_CLOSE_WRITE`), not now, so a file created long before
    /// its first byte (a download waiting for the network) is not reported empty. Anything else is armed: a hard
    /// link, a symbolic link, a file linked in whole (`O_TMPFILE` and `linkat`), which get no other event, and a
    /// FIFO, socket or device, to be passed over with its warning.
    func armCreated() {
        guard !created.isEmpty else { return }
        for key in created where !pending.contains(key) {
            var st = stat()
            guard lstat(path(key.source, key.path.value), &st) == 0 else { continue }
            if st.st_mode & S_IFMT == S_IFREG && st.st_nlink == 1 && st.st_size == 0 { continue }
            arm(key)
        }
        if created.count > 65_536 { created = [] } else { created.removeAll(keepingCapacity: true) }
    }

    /// Stamps the files armed this round (once each, however many events they had).
    func stampArmed() {
        armCreated()
        guard !toStamp.isEmpty else { return }
        for key in toStamp where pending.needsStamp(key) {
            switch kind(of: key, warn: true) {
            case .file(let stamp):
                pending.setStamp(key, stamp)
            case .folder:
                pending.remove(key)  // a link to a folder (`follow_symlinks`), or a file replaced by a folder
                if sources[key.source].followSymlinks && !sources[key.source].skipsFolder(key.path.value) {
                    watchTree(key.source, key.path.value, report: true)
                }
            case .gone, .skipped:
                pending.remove(key)
            }
        }
        if toStamp.count > 65_536 { toStamp = [] } else { toStamp.removeAll(keepingCapacity: true) }
    }

    /// Hands over the files that settled: unchanged since their last event for `settle`.
    func settleDue() {
        var readyKeys: [FileKey] = []
        for (key, stamp) in pending.popDue(now: now) {
            switch kind(of: key, warn: false) {
            case .file(let current):
                if current == stamp {
                    readyKeys.append(FileKey(source: sources[key.source].name, path: key.path.value))
                } else {
                    pending.rearm(key, stamp: current, now: now)
                }
            case .folder, .gone, .skipped:
                break
            }
        }
        outbox.add(readyKeys)
        outbox.addRemoved(removed)
        if removed.count > 65_536 { removed = [] } else { removed.removeAll(keepingCapacity: true) }
    }

    /// What a path is now, following a link only with `follow_symlinks` (and warning, if asked, what a walk warns).
    func kind(of key: SettleQueue.Key, warn shouldWarn: Bool) -> Kind {
        let source = sources[key.source]
        let absolute = path(key.source, key.path.value)
        var st = stat()
        guard lstat(absolute, &st) == 0 else { return .gone }
        var kind = st.st_mode & S_IFMT
        if kind == S_IFLNK {
            guard source.followSymlinks else {
                let message = "skipped: symbolic link (set follow_symlinks: true to follow links)"
                if shouldWarn { warn(source, key.path.value, message) }
                return .skipped(message)
            }
            guard stat(absolute, &st) == 0 else {
                if shouldWarn { warn(source, key.path.value, "skipped: broken or looping symbolic link") }
                return .skipped("broken link")
            }
            kind = st.st_mode & S_IFMT
        }
        switch kind {
        case S_IFREG:
            return .file(SettleQueue.Stamp(size: Int64(st.st_size), seconds: st.st_mtim.tv_sec, nanoseconds: st.st_mtim.tv_nsec))
        case S_IFDIR:
            return .folder
        default:
            let what = kind == S_IFIFO ? "a FIFO" : kind == S_IFSOCK ? "a socket" : "a device"
            let message = "skipped: \(what), not a regular file"
            if shouldWarn { warn(source, key.path.value, message) }
            return .skipped(message)
        }
    }

    // MARK: time

    static func monotonic() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
#endif
