import Foundation
import Logging
@testable import SyncgateCore
import SyncgateTestSupport
import Testing

/// A ``SourceWatcher`` over real folders, with what it reported and logged, for the watch tests.
final class WatchRecorder: @unchecked Sendable {
    let watcher: SourceWatcher
    private let lock = NSLock()
    private var received: [(at: ContinuousClock.Instant, event: WatchEvent)] = []
    private let logs: LogCapture
    private var consumer: Task<Void, Never>?
    private var ended = false

    init(sources: [SourceConfig], settle: Duration, pendingLimit: Int = 100_000, watchLimit: Int? = nil,
         limitRetry: Duration = .seconds(60)) throws {
        let logs = LogCapture()
        self.logs = logs
        watcher = try SourceWatcher(sources: sources, settle: settle, pendingLimit: pendingLimit, watchLimit: watchLimit,
                                    limitRetry: limitRetry, rootCheck: .milliseconds(200),
                                    logger: Logger(label: "syncgate.watch.test", factory: { _ in logs }))
        consumer = Task { [watcher, weak self] in
            for await event in watcher.events { self?.record(event) }
            self?.lock.withLock { self?.ended = true }
        }
    }

    deinit { watcher.stop() }

    /// A recorder whose watches are set (an issue is recorded if they are not within 20 s).
    static func watching(sources: [SourceConfig], settle: Duration, pendingLimit: Int = 100_000, watchLimit: Int? = nil,
                         limitRetry: Duration = .seconds(60)) async throws -> WatchRecorder {
        let recorder = try WatchRecorder(sources: sources, settle: settle, pendingLimit: pendingLimit, watchLimit: watchLimit,
                                         limitRetry: limitRetry)
        await recorder.waitUntilWatching()
        return recorder
    }

    /// A recorder over one source, `src`: every file of a folder.
    static func watching(_ path: String, settle: Duration) async throws -> WatchRecorder {
        try await watching(sources: [source(path)], settle: settle)
    }

    /// A source over a folder: every file unless told otherwise.
    static func source(_ path: String, name: String = "src", include: [String] = ["**/*"], exclude: [String] = [],
                       followSymlinks: Bool = false, optional: Bool = false) throws -> SourceConfig {
        SourceConfig(name: name, path: path, include: try GlobSet(patterns: include), exclude: try GlobSet(patterns: exclude),
                     followSymlinks: followSymlinks, optional: optional)
    }

    private func record(_ event: WatchEvent) {
        lock.withLock { received.append((ContinuousClock.now, event)) }
    }

    var events: [WatchEvent] { lock.withLock { received.map(\.event) } }

    /// Every file reported, in order, with repeats.
    var reported: [FileKey] {
        events.flatMap { event -> [FileKey] in
            if case .files(let keys) = event { return keys }
            return []
        }
    }

    /// Paths reported (of any source), in order, with repeats.
    var paths: [String] { reported.map(\.path) }

    func count(_ path: String) -> Int { paths.filter { $0 == path }.count }

    /// When a path was first reported.
    func firstReport(of path: String) -> ContinuousClock.Instant? {
        lock.withLock {
            received.first { item in
                if case .files(let keys) = item.event { return keys.contains { $0.path == path } }
                return false
            }?.at
        }
    }

    /// Paths reported deleted or renamed away, in order.
    var removedPaths: [String] {
        events.flatMap { event -> [String] in
            if case .removed(let keys) = event { return keys.map(\.path) }
            return []
        }
    }

    var rescans: [String] {
        events.compactMap { event in
            if case .rescan(let reason) = event { return reason }
            return nil
        }
    }

    /// The `.files` batches, their sizes.
    var batches: [Int] {
        events.compactMap { event in
            if case .files(let keys) = event { return keys.count }
            return nil
        }
    }

    var hasEnded: Bool { lock.withLock { ended } }

    var logged: [String] { logs.lines }

    /// Waits until `condition` holds, polling; false if it still does not after `limit` (a liveness bound only: it
    /// returns as soon as the condition holds, and the whole suite's first minute on two cores has held every test up
    /// for 40-60 s, so the default is long).
    @discardableResult
    func wait(within limit: Duration = .seconds(90), until condition: () -> Bool) async -> Bool {
        await WatchRecorder.wait(within: limit, until: condition)
    }

    @discardableResult
    static func wait(within limit: Duration = .seconds(90), until condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }

    /// Waits for the watches to be set; records an issue if they are not within 90 s.
    func waitUntilWatching() async {
        let ok = await wait { watcher.isWatching }
        #expect(ok, "the watches were not set within 90 s")
    }

    func stop() {
        watcher.stop()
    }

    /// Keeps what is logged, for the tests that check a message.
    final class LogCapture: LogHandler, @unchecked Sendable {
        private let lock = NSLock()
        private var kept: [String] = []
        var logLevel: Logger.Level = .debug
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        var lines: [String] { lock.withLock { kept } }

        func log(event: LogEvent) {
            lock.withLock { kept.append("\(event.level): \(event.message)") }
        }
    }
}
