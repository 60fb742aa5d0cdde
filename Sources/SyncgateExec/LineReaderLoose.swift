#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads lines for a log: a line longer than `limit` is cut into pieces rather than refused.
enum LineReaderLoose {
    static func read(_ fd: Int32, limit: Int, line: (ArraySlice<UInt8>) -> Void) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                break
            }
            if n == 0 { break }
            buffer.append(contentsOf: chunk[0..<n])
            var start = 0
            while let newline = buffer[start...].firstIndex(of: 0x0A) {
                var end = newline
                if end > start && buffer[end - 1] == 0x0D { end -= 1 }
                line(buffer[start..<end])
                start = newline + 1
            }
            while buffer.count - start > limit {
                line(buffer[start..<(start + limit)])
                start += limit
            }
            if start > 0 { buffer.removeFirst(start) }
        }
        if !buffer.isEmpty { line(buffer[...]) }
    }
}
