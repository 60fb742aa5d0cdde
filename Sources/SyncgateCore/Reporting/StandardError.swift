#if canImport(Glibc)
import Glibc
private let systemWrite = Glibc.write
#elseif canImport(Darwin)
import Darwin
private let systemWrite = Darwin.write
#endif
import Synchronization

/// Standard error, written one whole line at a time: the log handler's lines and the commands' own (``LogLine``)
/// never cut into each other, so that a log shipper reads one JSON object per line.
public enum StandardError {
    private static let writing = Mutex(())

    /// Writes `text` (its own line breaks included) with `write(2)`; a closed or full standard error drops it.
    public static func write(_ text: String) {
        writing.withLock { _ in
            var bytes = Array(text.utf8)[...]
            while !bytes.isEmpty {
                let n = bytes.withUnsafeBytes { systemWrite(2, $0.baseAddress, $0.count) }
                if n > 0 {
                    bytes = bytes.dropFirst(n)
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}
