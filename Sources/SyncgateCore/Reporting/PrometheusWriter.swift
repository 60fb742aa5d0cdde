import Foundation

/// Writes a node_exporter textfile-collector file atomically (temporary file + rename), or the same text to
/// standard output (`status --prometheus -`).
public enum PrometheusWriter {
    public static func render(_ report: StatusReport, build: BuildDescription = .unknown) -> String {
        var out = "# HELP syncgate_files Files per destination and status.\n# TYPE syncgate_files gauge\n"
        for d in report.destinations {
            for (status, n) in [("synced", d.synced), ("pending", d.pending), ("uploading", d.uploading), ("failed", d.failed)] {
                out += "syncgate_files{destination=\"\(escape(d.name))\",type=\"\(escape(d.type))\",status=\"\(status)\"} \(n)\n"
            }
        }
        out += "# HELP syncgate_last_success_timestamp_seconds Time of the last file synced to the destination.\n"
        out += "# TYPE syncgate_last_success_timestamp_seconds gauge\n"
        for d in report.destinations {
            out += "syncgate_last_success_timestamp_seconds{destination=\"\(escape(d.name))\"} \(d.lastSuccess.map { String(format: "%.3f", $0.timeIntervalSince1970) } ?? "0")\n"
        }
        out += "# HELP syncgate_destination_up Whether the destination was usable at the end of the last run (0: unavailable or blocked).\n"
        out += "# TYPE syncgate_destination_up gauge\n"
        for d in report.destinations {
            out += "syncgate_destination_up{destination=\"\(escape(d.name))\",type=\"\(escape(d.type))\"} \(d.state == .available ? 1 : 0)\n"
        }
        out += "# HELP syncgate_destination_state The destination's state (1 for the one it is in).\n# TYPE syncgate_destination_state gauge\n"
        for d in report.destinations {
            for state in DestinationState.allCases {
                out += "syncgate_destination_state{destination=\"\(escape(d.name))\",state=\"\(state.rawValue)\"} \(d.state == state ? 1 : 0)\n"
            }
        }
        out += "# HELP syncgate_sync_running Whether a sync holds the state lock.\n# TYPE syncgate_sync_running gauge\n"
        out += "syncgate_sync_running \(report.syncRunning ? 1 : 0)\n"
        // A timer that stopped (or a run that keeps failing) shows here: alert on time() minus the first.
        out += "# HELP syncgate_last_run_timestamp_seconds When the last sync or gateway run ended (when it started, while it runs; 0: never).\n"
        out += "# TYPE syncgate_last_run_timestamp_seconds gauge\n"
        let lastRun = report.lastRun.map { ($0.finishedAt ?? $0.startedAt).timeIntervalSince1970 }
        out += "syncgate_last_run_timestamp_seconds \(lastRun.map { String(format: "%.3f", $0) } ?? "0")\n"
        if let code = report.lastRun?.exitCode {
            out += "# HELP syncgate_last_run_exit_code The exit code of the last run that ended (0 synced, 1 failed, 75 retry scheduled).\n"
            out += "# TYPE syncgate_last_run_exit_code gauge\n"
            out += "syncgate_last_run_exit_code \(code)\n"
        }
        out += "# HELP \(BuildDescription.metricName) \(BuildDescription.metricHelp)\n# TYPE \(BuildDescription.metricName) gauge\n"
        out += "\(BuildDescription.metricName){\(build.labels.map { "\($0.0)=\"\(escape($0.1))\"" }.joined(separator: ","))} 1\n"
        return out
    }

    public static func write(_ report: StatusReport, build: BuildDescription = .unknown, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp")
        try Data(render(report, build: build).utf8).write(to: temporary)
        // rename(2) replaces an existing file atomically. (Foundation's replaceItemAt failed here on Linux when the
        // file existed, and left a folder in /tmp on every call.)
        guard rename(temporary.path, url.path) == 0 else {
            let code = errno
            unlink(temporary.path)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "cannot replace \(path): \(String(cString: strerror(code)))"])
        }
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }
}
