import Logging
import Synchronization

/// What a test's logger logged, one line per message: its level, the message, and its metadata (sorted, when any).
public final class CapturedLogs: Sendable {
    private let stored = Mutex<[String]>([])

    public init() {}

    /// The lines so far, in order.
    public var lines: [String] { stored.withLock { $0 } }

    func append(_ line: String) { stored.withLock { $0.append(line) } }

    /// A logger writing here, at `level` and above.
    public func logger(level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "syncgate-test") { _ in Handler(logs: self) }
        logger.logLevel = level
        return logger
    }

    struct Handler: LogHandler {
        let logs: CapturedLogs
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { _, new in new }
            let fields = all.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ")
            logs.append("\(event.level) \(event.message)" + (fields.isEmpty ? "" : " " + fields))
        }
    }
}
