import Foundation
import Logging

/// A log handler that writes to standard error and scrubs registered secrets from every message and metadata value:
/// plain lines (`syncgate: warning: ...`) for people, or one JSON object per line for log shippers
/// (`--log-format json`, ``LogLine``: metadata logged as numbers, `.stringConvertible(n)`, are JSON numbers).
public struct RedactingLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    let label: String
    let format: LogLine.Format

    public init(label: String, level: Logger.Level, format: LogLine.Format = .plain) {
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
            // Names in messages are a terminal's to show, not to obey: control characters escaped.
            line = TerminalText.escapeKeepingLines(Redactor.shared.redact("syncgate: \(event.level): \(event.message)\(LogLine.plainFields(all))"))
        case .json:
            line = LogLine.json(level: event.level, label: label, message: "\(event.message)", fields: all.mapValues(LogLine.value))
        }
        StandardError.write(line + "\n")
    }
}
