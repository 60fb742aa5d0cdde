import Foundation
import Logging

/// A log handler that writes to standard error and scrubs registered secrets from every message and metadata value.
public struct RedactingLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    let label: String

    public init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let extra = event.metadata { all.merge(extra) { $1 } }
        let meta = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let line = Redactor.shared.redact("syncgate: \(event.level): \(event.message)\(meta)\n")
        FileHandle.standardError.write(Data(line.utf8))
    }
}
