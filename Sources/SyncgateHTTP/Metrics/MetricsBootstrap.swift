import CoreMetrics
import Prometheus

/// The process's swift-metrics backend: a Prometheus registry that `/metrics` prints. swift-metrics can be
/// bootstrapped once per process, so this is the one place that does it; ``bootstrap()`` may be called any number
/// of times (``StatusServer/init(settings:gateway:logger:heartbeat:)`` calls it). Counters made before it (the
/// engine makes its counters when a pass starts) stay no-ops: bootstrap before the first pass.
public enum MetricsBootstrap {
    /// Where swift-metrics reports once bootstrapped.
    public static let registry = PrometheusCollectorRegistry()

    private static let once: Void = {
        MetricsSystem.bootstrap(DescribedMetricsFactory(registry: registry))
    }()

    /// Makes swift-metrics report into ``registry`` (the first call; later ones do nothing).
    public static func bootstrap() {
        _ = once
    }
}
