import Foundation
import Logging

/// A log handler that writes to standard error and scrubs registered secrets from every message and metadata value:
/// plain lines (`syncgate: warning: ...`) for people, or one JSON object per line for log shippers
/// (`--log-format json`: `time`, `level`, `label`, `message` and the metadata as keys).
public struct RedactingLogHandler: LogHandler {
    public enum Format: String, Sendable, CaseIterable {
        case plain, json
    }

    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    let label: String
    let format: Format

    public init(label: String, level: Logger.Level, format: Format = .plain) {
        self.label = label
        self.logLevel = level
        self.format = format
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let extra = event.metadata { all.merge(extra) { $1 } }
        let line: String
        switch format {
        case .plain:
            let meta = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            // Names in messages are a terminal's to show, not to obey: control characters escaped.
            line = TerminalText.escapeKeepingLines(Redactor.shared.redact("syncgate: \(event.level): \(event.message)\(meta)")) + "\n"
        case .json:
            var object: [String: Any] = [:]
            for (key, value) in all { object[key] = Redactor.shared.redact("\(value)") }
            object["time"] = ReportJSON.time(Date())
            object["level"] = event.level.rawValue
            object["label"] = label
            object["message"] = Redactor.shared.redact("\(event.message)")
            line = ReportJSON.encode(object) + "\n"
        }
        FileHandle.standardError.write(Data(line.utf8))
    }
}
