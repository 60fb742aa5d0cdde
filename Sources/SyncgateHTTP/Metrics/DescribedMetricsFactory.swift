import CoreMetrics
import Prometheus

/// swift-metrics onto a Prometheus registry, as swift-prometheus's own factory does, but with each of syncgate's
/// families described (`# HELP`) and the upload-duration histogram given buckets that fit file uploads (10 ms to
/// 30 min). Labels it does not know go to swift-prometheus's factory unchanged.
struct DescribedMetricsFactory: MetricsFactory {
    let base: PrometheusMetricsFactory

    init(registry: PrometheusCollectorRegistry) {
        var base = PrometheusMetricsFactory(registry: registry)
        base.durationHistogramBuckets = [DescribedMetricsFactory.uploadDuration: DescribedMetricsFactory.uploadBuckets]
        self.base = base
    }

    static let uploadDuration = "syncgate_upload_duration_seconds"
    static let uploadBuckets: [Duration] = [
        .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
        .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30), .seconds(60), .seconds(120), .seconds(300),
        .seconds(600), .seconds(1800),
    ]

    /// The `# HELP` of each family syncgate's core counts (Sources/SyncgateCore/Reporting/DeliveryMetrics.swift).
    static let help: [String: String] = [
        "syncgate_attempts_total": "Upload attempts started, by destination.",
        "syncgate_retries_total": "Attempts that failed and were retried within a pass, by destination.",
        "syncgate_synced_total": "Deliveries: files synced (sent, or found already there), by destination.",
        "syncgate_failed_total": "Files that failed in a pass, by destination, class (retryable, permanent, deferred) and scope (file, destination).",
        "syncgate_waiting_total": "Files left waiting because their destination was unavailable or blocked, by destination.",
        "syncgate_bytes_uploaded_total": "Bytes of files uploaded (not counting files found already there), by destination.",
        uploadDuration: "Time from the start of a file's successful attempt to its delivery, by destination.",
    ]

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        guard let text = DescribedMetricsFactory.help[label] else { return base.makeCounter(label: label, dimensions: dimensions) }
        return base.registry.makeCounter(descriptor: DescribedMetricsFactory.descriptor(label, text), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        base.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        base.makeMeter(label: label, dimensions: dimensions)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        guard let text = DescribedMetricsFactory.help[label] else { return base.makeTimer(label: label, dimensions: dimensions) }
        let buckets = base.durationHistogramBuckets[label] ?? base.defaultDurationHistogramBuckets
        return base.registry.makeDurationHistogram(descriptor: DescribedMetricsFactory.descriptor(label, text), labels: dimensions, buckets: buckets)
    }

    /// A whole metric name with its `# HELP`.
    static func descriptor(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    func destroyCounter(_ handler: any CounterHandler) { base.destroyCounter(handler) }
    func destroyRecorder(_ handler: any RecorderHandler) { base.destroyRecorder(handler) }
    func destroyMeter(_ handler: any MeterHandler) { base.destroyMeter(handler) }
    func destroyTimer(_ handler: any TimerHandler) { base.destroyTimer(handler) }
}
