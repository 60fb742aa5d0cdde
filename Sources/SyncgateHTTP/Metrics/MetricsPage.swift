import Foundation
import Prometheus
import SyncgateCore

/// `GET /metrics`: the Prometheus text format. What the ledger and the gateway know now (files by destination and
/// status, each destination's state, the last success, the queue, the last complete pass) is read at scrape time
/// into a registry made for this scrape, so a series never outlives what it describes; what swift-metrics counts
/// (attempts, deliveries, bytes, failures by class and scope, upload durations) follows from
/// ``MetricsBootstrap/registry``; then the process's own series (``ProcessMetrics``) and `syncgate_build_info`.
enum MetricsPage {
    /// The content type Prometheus scrapes (text format 0.0.4).
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    static func render(report: StatusReport, figures: GatewayFigures, ready: Bool, build: BuildDescription = .unknown) -> String {
        let now = PrometheusCollectorRegistry()
        func gauge(_ name: String, _ help: String, _ labels: [(String, String)] = []) -> Gauge {
            let descriptor = DescribedMetricsFactory.descriptor(name, help)
            return labels.isEmpty ? now.makeGauge(descriptor: descriptor) : now.makeGauge(descriptor: descriptor, labels: labels)
        }
        for d in report.destinations {
            for (status, n) in [("synced", d.synced), ("pending", d.pending), ("uploading", d.uploading), ("failed", d.failed)] {
                gauge("syncgate_files", "Files per destination and status, from the ledger.",
                      [("destination", d.name), ("type", d.type), ("status", status)]).set(Int64(n))
            }
        }
        for d in report.destinations {
            gauge("syncgate_destination_up", "Whether the destination is usable (0: unavailable or blocked).",
                  [("destination", d.name), ("type", d.type)]).set(Int64(d.state == .available ? 1 : 0))
            for s in DestinationState.allCases {
                gauge("syncgate_destination_state", "The destination's state (1 for the one it is in).",
                      [("destination", d.name), ("state", s.rawValue)]).set(Int64(d.state == s ? 1 : 0))
            }
            gauge("syncgate_destination_waiting_files", "Files waiting for a destination that is unavailable or blocked.",
                  [("destination", d.name)]).set(Int64(d.waiting))
            gauge("syncgate_last_success_timestamp_seconds", "Time of the last file synced to the destination (0: never).",
                  [("destination", d.name)]).set(d.lastSuccess?.timeIntervalSince1970 ?? 0)
            gauge("syncgate_verification_timestamp_seconds", "When the destination was last verified against the ledger (syncgate check; 0: never).",
                  [("destination", d.name)]).set(d.verification?.verifiedAt.timeIntervalSince1970 ?? 0)
            gauge("syncgate_verification_checked_files", "Synced files the last verification compared with the destination.",
                  [("destination", d.name)]).set(Int64(d.verification?.checked ?? 0))
            for (kind, n) in [("missing", d.verification?.missing), ("different", d.verification?.different),
                              ("extra", d.verification?.extra), ("error", d.verification?.errors)] {
                gauge("syncgate_verification_findings", "What the last verification found, by kind.",
                      [("destination", d.name), ("kind", kind)]).set(Int64(n ?? 0))
            }
        }
        gauge("syncgate_queue_depth", "Files seen changed and not planned yet (settling, or waiting for a pass).").set(Int64(figures.queueDepth))
        gauge("syncgate_last_complete_pass_timestamp_seconds", "When the last pass over every source ended (0: none yet).")
            .set(figures.lastCompletePass?.timeIntervalSince1970 ?? 0)
        now.makeCounter(descriptor: DescribedMetricsFactory.descriptor("syncgate_passes_total", "Passes run since the gateway started."))
            .increment(by: Int64(figures.passes))
        gauge("syncgate_ready", "Whether the gateway is ready (config loaded, ledger open, watches set).").set(Int64(ready ? 1 : 0))
        gauge("syncgate_needs_attention", "Whether a file failed or a destination is blocked (status --check).").set(Int64(report.needsAttention ? 1 : 0))
        gauge(BuildDescription.metricName, BuildDescription.metricHelp, build.labels).set(Int64(1))
        for series in ProcessMetrics.current()?.series ?? [] {
            let descriptor = DescribedMetricsFactory.descriptor(series.name, series.help)
            if series.counter {
                now.makeCounter(descriptor: descriptor).increment(by: series.value)
            } else {
                now.makeGauge(descriptor: descriptor).set(series.value)
            }
        }

        var buffer: [UInt8] = []
        now.emit(into: &buffer)
        MetricsBootstrap.registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
