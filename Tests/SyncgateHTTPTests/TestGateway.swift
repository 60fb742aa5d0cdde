import Foundation
import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport

/// A small real gateway for the HTTP tests: a config with local destinations in a temporary folder, a real
/// `Ledger` and `SyncEngine`, and passes run when a test (or a retry) asks, one at a time. What the server shows
/// is what the engine recorded; nothing here makes up a status.
final class TestGateway: GatewayObservable, @unchecked Sendable {
    let dir: TemporaryDirectory
    let config: GatewayConfig
    let ledger: Ledger
    let engine: SyncEngine
    let fanOut = EventFanOut()
    private let passes = PassQueue()
    private let lock = NSLock()
    private var ready = true
    private var passCount = 0
    private var lastPass: Date?
    /// The passes a retry started, so that a test can wait for them.
    private var retryPasses: [Task<SyncSummary, any Error>] = []

    /// `destinations`: the YAML items of `destinations:` (each a local folder under the test folder); every file of
    /// the source `outbox` goes to every one.
    /// `plugins`: destination types beside `local`; `routes`: the YAML items of `routes:` (default: every file to
    /// every destination).
    init(_ prefix: String = "sg-http", destinations: [String] = ["{name: archive, type: local, path: archive}"],
         plugins: [PluginRegistration] = [], routes: [String]? = nil) throws {
        dir = try TemporaryDirectory(prefix)
        try FileManager.default.createDirectory(at: dir.file("outbox"), withIntermediateDirectories: true)
        let names = try destinations.map { item -> String in
            guard let name = item.firstMatch(of: /name: *([A-Za-z0-9_-]+)/)?.1 else { throw CocoaError(.coderInvalidValue) }
            return String(name)
        }
        config = try GatewayConfig.parse(text: """
            version: 1
            state: state/ledger.sqlite
            sources: [{name: outbox, path: outbox}]
            defaults:
              retry: { file: 1, artwork: 1, base_delay: 10ms, max_delay: 10ms, jitter: none }
              recent: { completed: 1h, failed: 1h }
            destinations:
            \(destinations.map { "  - " + $0 }.joined(separator: "\n"))
            routes: [\((routes ?? ["{match: [\"**/*\"], to: [\(names.joined(separator: ", "))]}"]).joined(separator: ", "))]
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: PluginRegistry([LocalDestination.registration] + plugins))
        ledger = try Ledger(state: config.state)
        engine = SyncEngine(config: config, ledger: ledger)
    }

    /// Runs one pass (after any running one), its events going to every ``events()`` stream.
    @discardableResult
    func runPass(_ options: SyncOptions = SyncOptions()) async throws -> SyncSummary {
        let engine = self.engine, fanOut = self.fanOut
        let summary = try await passes.run { try await engine.run(options, observe: { fanOut.send($0) }) }
        lock.withLock {
            passCount += 1
            lastPass = Date()
        }
        return summary
    }

    /// Waits for the passes retries started.
    func settle() async throws {
        for task in lock.withLock({ retryPasses }) { _ = try await task.value }
    }

    func setReady(_ value: Bool) { lock.withLock { ready = value } }

    func stop() {
        fanOut.finish()
        dir.remove()
    }

    // MARK: - GatewayObservable

    var isReady: Bool { lock.withLock { ready } }

    func statusReport() async throws -> StatusReport {
        try await StatusReport.build(config: config, ledger: ledger, destination: nil, failedOnly: false)
    }

    var operations: OperationList { engine.operations }

    func events() -> AsyncStream<DeliveryEvent> { fanOut.subscribe() }

    func recorded() -> AsyncStream<Void> { ledger.commits() }

    /// As `syncgate retry` does: failed files (and, with no path, blocked destinations) are due now, and a pass of
    /// the failed files starts at once; returns the files that were failed.
    func retry(destination: String?, paths: [String]) async throws -> Int {
        let n = try await ledger.requestRetry(destination: destination, paths: paths, at: Date())
        if paths.isEmpty { _ = try await ledger.unblock(destination: destination, at: Date()) }
        let task = Task { try await self.runPass(SyncOptions(onlyFailed: true, destinations: destination.map { [$0] } ?? [])) }
        lock.withLock { retryPasses.append(task) }
        return n
    }

    func forget(destination: String?, paths: [String]) async throws -> Int {
        try await ledger.forgetFailed(destination: destination, paths: paths)
    }

    var figures: GatewayFigures {
        lock.withLock { GatewayFigures(queueDepth: 0, lastCompletePass: lastPass, passes: passCount) }
    }
}

/// Runs passes one after another.
private actor PassQueue {
    private var last: Task<Void, Never>?

    func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let previous = last
        let task = Task { () async throws -> T in
            await previous?.value
            return try await body()
        }
        last = Task { _ = try? await task.value }
        return try await task.value
    }
}
