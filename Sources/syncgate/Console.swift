#if canImport(Glibc)
import Glibc
private let systemWrite = Glibc.write
#elseif canImport(Darwin)
import Darwin
private let systemWrite = Darwin.write
#endif
import Foundation
import Logging
import SyncgateCore
import Synchronization

/// Plain output (secrets scrubbed), written with `write(2)` so that a reader that goes away (`syncgate status |
/// head -1`) ends the command quietly instead of crashing it: see ``onBrokenPipe``.
enum Console {
    /// What happens when standard output's reader has gone (EPIPE). By default the process exits at once with 141
    /// (as a program killed by SIGPIPE would, without a word); a sync replaces it to stop its run cleanly first.
    static var onBrokenPipe: @Sendable () -> Void {
        get { brokenPipe.withLock { $0 } }
        set { brokenPipe.withLock { $0 = newValue } }
    }
    private static let brokenPipe = Mutex<@Sendable () -> Void>({ _exit(141) })
    /// Whether standard output's reader has gone; also held while anything is written, so that lines stay whole.
    private static let outputClosed = Mutex(false)

    /// Whether standard output's reader has gone.
    static var isOutputClosed: Bool { outputClosed.withLock { $0 } }

    static func out(_ line: String) {
        write(Redactor.shared.redact(line) + "\n", to: 1)
    }

    /// Text as it is (already redacted, with its own newlines).
    static func outRaw(_ text: String) {
        write(text, to: 1)
    }

    /// How lines on standard error are written (`--log-format`): set before the arguments are parsed, so that a
    /// usage error is written in it too.
    static var logFormat: LogLine.Format {
        get { format.withLock { $0 } }
        set { format.withLock { $0 = newValue } }
    }
    private static let format = Mutex(LogLine.Format.plain)

    /// An error line: `syncgate: LINE`, or a JSON object at level `error` with `fields`.
    static func error(_ line: String, fields: [String: Any] = [:]) {
        log(.error, line, fields: fields)
    }

    /// A warning: `syncgate: warning: LINE`, or a JSON object at level `warning`.
    static func warning(_ line: String, fields: [String: Any] = [:]) {
        log(.warning, line, plainPrefix: "warning: ", fields: fields)
    }

    /// A line on standard error at `level`: plain `syncgate: ` + `plainPrefix` + `line` (secrets scrubbed), or its
    /// JSON object (``LogLine``) with `fields` typed.
    static func log(_ level: Logger.Level, _ line: String, plainPrefix: String = "", fields: [String: Any] = [:]) {
        switch logFormat {
        case .plain: StandardError.write("syncgate: " + Redactor.shared.redact(plainPrefix + line) + "\n")
        case .json: StandardError.write(LogLine.json(level: level, label: "syncgate", message: line, fields: fields) + "\n")
        }
    }

    /// Text to standard error as it is (a progress line, a line break ending one): plain output only; with
    /// `--log-format json` nothing (each line there is a JSON object).
    static func errorRaw(_ text: String) {
        guard logFormat == .plain else { return }
        StandardError.write(text)
    }

    static var stderrIsTerminal: Bool { isatty(2) == 1 }

    private static func write(_ text: String, to fd: Int32) {
        if fd == 1 && isOutputClosed { return }
        let broken: Bool = outputClosed.withLock { outputClosed in
            var bytes = Array(text.utf8)[...]
            while !bytes.isEmpty {
                let n = bytes.withUnsafeBytes { systemWrite(fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    bytes = bytes.dropFirst(n)
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    if fd == 1, errno == EPIPE, !outputClosed {
                        outputClosed = true
                        return true
                    }
                    return false  // standard error gone, or full: nothing better to do than drop it
                }
            }
            return false
        }
        if broken { onBrokenPipe() }
    }

    /// `date` as a person reads it (``HumanTime``).
    static func when(_ date: Date) -> String { HumanTime.text(date) }
}
