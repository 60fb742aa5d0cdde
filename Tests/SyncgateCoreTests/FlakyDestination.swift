import Foundation
import SyncgateCore
import SyncgateTestSupport

/// A destination for tests that fails on command: `transient` retryable failures per file before success,
/// or a permanent failure for files whose name contains `permanentMarker`. It stores what it receives in memory
/// (names and contents) and counts attempts, so tests see exactly what the delivery layer and engine did.
final class FlakyDestination: Destination, @unchecked Sendable {
    private let lock = NSLock()
    var transientFailures: Int
    var permanentMarker: String?
    var retryAfter: Duration?
    var deferFirst: Int
    var uploadDelay: Duration
    var authoritative: Bool
    private(set) var attempts: [String: Int] = [:]
    private(set) var stored: [String: Data] = [:]
    private(set) var inFlight = 0
    private(set) var maxInFlight = 0
    private(set) var deletes: [String] = []
    private(set) var finished = 0
    /// What ``makeDurable()`` saw each time it was called: the names stored by then.
    private(set) var durableSnapshots: [Set<String>] = []
    /// Makes ``makeDurable()`` throw (a flush that fails).
    var failDurability = false
    /// While set, every upload and probe throws it (a destination that is away, blocked or throttling).
    var awayError: DestinationError?
    /// Uploads that throw ``awayError`` before the destination behaves again (nil: as long as it is set).
    var awayAttempts: Int?
    /// Only files whose name contains this fail transiently (nil: every file).
    var transientMarker: String?
    /// A share of all upload attempts (0...1) that fail with a retryable "InternalError", drawn from a generator
    /// seeded with ``failureSeed`` (a flaky server: random 5xx).
    var failureFraction = 0.0
    var failureSeed: UInt64 = 42 {
        didSet { generator = SplitMix(seed: failureSeed) }
    }
    private var generator = SplitMix(seed: 42)
    /// Called before an upload reads its file (a test removes the file there: gone between the walk and the upload).
    var beforeRead: (@Sendable (UploadItem) -> Void)?
    /// Single deletes that fail retryably (a 500) before deletes work.
    var deleteFailures = 0
    /// Remote names whose delete is refused for good (AccessDenied).
    var refusedDeletes: Set<String> = []
    /// What ``settingsFingerprint`` says (a test changes it as a user would fix the credentials).
    var fingerprint = ""
    private(set) var probes = 0
    private(set) var totalAttempts = 0
    /// Reads the names the ledger records synced; ``makeDurable()`` then notes any that no earlier flush covered.
    var syncedInLedger: (@Sendable () throws -> Set<String>)?
    /// Names the ledger recorded synced before a flush had covered them (must stay empty).
    private(set) var syncedBeforeFlush: Set<String> = []

    init(transientFailures: Int = 0, permanentMarker: String? = nil, retryAfter: Duration? = nil, deferFirst: Int = 0,
         uploadDelay: Duration = .zero, authoritative: Bool = false) {
        self.transientFailures = transientFailures
        self.permanentMarker = permanentMarker
        self.retryAfter = retryAfter
        self.deferFirst = deferFirst
        self.uploadDelay = uploadDelay
        self.authoritative = authoritative
    }

    var listingIsAuthoritative: Bool { authoritative }
    /// Whether it says its remote names never clash (it keeps paths, as a local folder does): the engine then
    /// hands it its plans in waves.
    var distinctNames = false
    var remoteNamesAreDistinct: Bool { distinctNames }
    /// Whether it needs one writer on a shared ledger (as a spreadsheet does): one instance leads it.
    var oneWriter = false
    var needsOneWriter: Bool { oneWriter }

    func makeDurable() throws {
        let synced = try syncedInLedger?() ?? []
        try lock.withLock {
            if failDurability { throw DestinationError.retryable("flush failed", code: "EIO") }
            let flushed = durableSnapshots.reduce(into: Set<String>()) { $0.formUnion($1) }
            syncedBeforeFlush.formUnion(synced.subtracting(flushed))
            durableSnapshots.append(Set(stored.keys))
        }
    }

    func upload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt {
        let attempt = lock.withLock { () -> Int in
            attempts[item.remoteName, default: 0] += 1
            totalAttempts += 1
            inFlight += 1
            maxInFlight = max(maxInFlight, inFlight)
            return attempts[item.remoteName]!
        }
        defer { lock.withLock { inFlight -= 1 } }
        if uploadDelay > .zero { try await Task.sleep(for: uploadDelay) }
        if let away = lock.withLock({ () -> DestinationError? in
            guard let awayError else { return nil }
            if let left = awayAttempts {
                if left <= 0 { return nil }
                awayAttempts = left - 1
            }
            return awayError
        }) {
            throw away
        }
        if lock.withLock({ failureFraction > 0 && Double(generator.next() % 1_000_000) / 1_000_000 < failureFraction }) {
            throw DestinationError.retryable("HTTP 500 InternalError: We encountered an internal error", code: "InternalError")
        }
        if let permanentMarker, item.relativePath.contains(permanentMarker) {
            throw DestinationError.permanent("refused \(item.relativePath)", code: "Refused")
        }
        if attempt <= deferFirst {
            throw DestinationError(.deferred(after: .milliseconds(500)), code: "NotReady", "not ready yet")
        }
        if attempt <= deferFirst + transientFailures, transientMarker.map({ item.relativePath.contains($0) }) ?? true {
            throw DestinationError.retryable("busy (attempt \(attempt))", code: "Busy", after: retryAfter)
        }
        beforeRead?(item)
        var data = Data()
        for try await chunk in try FileReader(path: item.absolutePath).chunks(size: 1024) {
            data.append(contentsOf: chunk)
            progress(Int64(data.count))
        }
        lock.withLock { stored[item.remoteName] = data }
        return Receipt(remoteName: item.remoteName, etag: "etag-\(data.count)")
    }

    func delete(remoteName: String) async throws {
        try lock.withLock {
            deletes.append(remoteName)
            if deleteFailures > 0 {
                deleteFailures -= 1
                throw DestinationError.retryable("HTTP 500 InternalError", code: "InternalError")
            }
            if refusedDeletes.contains(remoteName) {
                throw DestinationError.permanent("HTTP 403 AccessDenied: \(remoteName)", code: "AccessDenied")
            }
            guard stored.removeValue(forKey: remoteName) != nil else {
                throw DestinationError.permanent("no such file \(remoteName)", code: "not-found")
            }
        }
    }

    func list() async throws -> RemoteListing {
        lock.withLock { RemoteListing(entries: stored.keys.sorted().map { RemoteListing.Entry(name: $0, size: Int64(stored[$0]!.count)) }) }
    }

    func finish() async { lock.withLock { finished += 1 } }

    func probe() async throws {
        let away: DestinationError? = lock.withLock {
            probes += 1
            return awayAttempts == 0 ? nil : awayError
        }
        if let away { throw away }
    }

    var settingsFingerprint: String { lock.withLock { fingerprint } }

    func forget(_ name: String) { lock.withLock { _ = stored.removeValue(forKey: name) } }
    func attemptCount(_ name: String) -> Int { lock.withLock { attempts[name] ?? 0 } }
    func contents(_ name: String) -> Data? { lock.withLock { stored[name] } }
    var storedNames: Set<String> { lock.withLock { Set(stored.keys) } }
}
