import Foundation
import Metrics
import Synchronization

/// swift-metrics counters per destination (no-ops unless the embedding program bootstraps a metrics backend, as
/// `syncgate run`'s status server does): `syncgate_attempts_total`, `syncgate_retries_total`,
/// `syncgate_synced_total`, `syncgate_failed_total` (with `class`: retryable, permanent, deferred; and `scope`: file,
/// destination), `syncgate_waiting_total` (files left waiting for an unavailable or blocked destination),
/// `syncgate_bytes_uploaded_total`, and the timer `syncgate_upload_duration_seconds` (from the start of a file's
/// attempt to its delivery, for files uploaded; event times, so the engine's clock).
struct DeliveryMetrics: Sendable {
    let attempts: Counter
    let retries: Counter
    let synced: Counter
    /// `syncgate_failed_total` by class name and scope, made up front so that every series exists from 0.
    let failed: [FailureKey: Counter]
    let waiting: Counter
    let bytes: Counter
    let uploadDuration: Metrics.Timer
    private let starts = AttemptStarts()

    struct FailureKey: Hashable, Sendable {
        var failureClass: String
        var scope: FailureScope
    }

    static let failureClasses = ["retryable", "permanent", "deferred"]

    init(destination: String) {
        let d = [("destination", destination)]
        attempts = Counter(label: "syncgate_attempts_total", dimensions: d)
        retries = Counter(label: "syncgate_retries_total", dimensions: d)
        synced = Counter(label: "syncgate_synced_total", dimensions: d)
        var failed: [FailureKey: Counter] = [:]
        for name in DeliveryMetrics.failureClasses {
            for scope in [FailureScope.file, .destination] {
                failed[FailureKey(failureClass: name, scope: scope)] = Counter(
                    label: "syncgate_failed_total", dimensions: d + [("class", name), ("scope", scope.rawValue)]
                )
            }
        }
        self.failed = failed
        waiting = Counter(label: "syncgate_waiting_total", dimensions: d)
        bytes = Counter(label: "syncgate_bytes_uploaded_total", dimensions: d)
        uploadDuration = Metrics.Timer(label: "syncgate_upload_duration_seconds", dimensions: d)
    }

    func record(_ event: DeliveryEvent) {
        switch event.kind {
        case .started:
            attempts.increment()
            starts.set(event.file, event.time)
        case .retrying: retries.increment()
        case .synced(_, _, let uploaded):
            synced.increment()
            let started = starts.take(event.file)
            if uploaded {
                bytes.increment(by: Int(clamping: event.size))
                if let started { uploadDuration.recordNanoseconds(DeliveryMetrics.nanoseconds(from: started, to: event.time)) }
            }
        case .failed(let failure):
            starts.forget(event.file)
            if !failure.isCancellation {
                failed[FailureKey(failureClass: failure.failureClass.name, scope: failure.scope)]?.increment()
            }
        case .waiting:
            starts.forget(event.file)
            waiting.increment()
        case .gone:
            starts.forget(event.file)
        default: break
        }
    }

    static func nanoseconds(from start: Date, to end: Date) -> Int64 {
        let seconds = max(0, end.timeIntervalSince(start))
        return seconds >= Double(Int64.max) / 1e9 ? Int64.max : Int64(seconds * 1e9)
    }
}

/// When each file's current attempt started (only files in flight are held).
private final class AttemptStarts: Sendable {
    private let times = Mutex<[FileKey: Date]>([:])

    func set(_ file: FileKey, _ time: Date) { times.withLock { $0[file] = time } }
    func take(_ file: FileKey) -> Date? { times.withLock { $0.removeValue(forKey: file) } }
    func forget(_ file: FileKey) { _ = take(file) }
}
