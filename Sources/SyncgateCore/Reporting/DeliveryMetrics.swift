import Metrics

/// swift-metrics counters per destination (no-ops unless the embedding program bootstraps a metrics backend):
/// `syncgate_attempts_total`, `syncgate_retries_total`, `syncgate_synced_total`, `syncgate_failed_total`
/// (with `class`), `syncgate_waiting_total` (files left waiting for an unavailable or blocked destination),
/// `syncgate_bytes_uploaded_total`.
struct DeliveryMetrics: Sendable {
    let attempts: Counter
    let retries: Counter
    let synced: Counter
    let failedRetryable: Counter
    let failedPermanent: Counter
    let waiting: Counter
    let bytes: Counter

    init(destination: String) {
        let d = [("destination", destination)]
        attempts = Counter(label: "syncgate_attempts_total", dimensions: d)
        retries = Counter(label: "syncgate_retries_total", dimensions: d)
        synced = Counter(label: "syncgate_synced_total", dimensions: d)
        failedRetryable = Counter(label: "syncgate_failed_total", dimensions: d + [("class", "retryable")])
        failedPermanent = Counter(label: "syncgate_failed_total", dimensions: d + [("class", "permanent")])
        waiting = Counter(label: "syncgate_waiting_total", dimensions: d)
        bytes = Counter(label: "syncgate_bytes_uploaded_total", dimensions: d)
    }

    func record(_ event: DeliveryEvent) {
        switch event.kind {
        case .started: attempts.increment()
        case .retrying: retries.increment()
        case .synced(_, _, let uploaded):
            synced.increment()
            if uploaded { bytes.increment(by: Int(clamping: event.size)) }
        case .failed(let failure) where !failure.isCancellation:
            if failure.failureClass.isRetryable { failedRetryable.increment() } else { failedPermanent.increment() }
        case .waiting: waiting.increment()
        default: break
        }
    }
}
