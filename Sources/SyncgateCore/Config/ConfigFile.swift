#if canImport(Glibc)
import Glibc
private let systemRead = Glibc.read
#elseif canImport(Darwin)
import Darwin
private let systemRead = Darwin.read
#endif
import Foundation

/// Reads the config file: a regular file only (a folder, a FIFO or a device is refused at once, never waited on),
/// at most `limit` bytes.
enum ConfigFile {
    static func read(_ path: String, displayName: String, limit: Int) throws -> Data {
        func failure(_ message: String) -> ConfigError {
            ConfigError(file: displayName, line: nil, column: nil, keyPath: "", message: message)
        }
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { throw failure("no such file (pass --config PATH)") }
            throw failure("cannot read: \(String(cString: strerror(code)))")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw failure("cannot read: \(String(cString: strerror(errno)))") }
        switch st.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw failure("is a folder, not a config file (pass --config PATH/plugins.yaml)")
        default: throw failure("is not a regular file (a FIFO, socket or device); syncgate reads its config from a file")
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while data.count < limit {
            let n = buffer.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, min($0.count, limit - data.count)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw failure("cannot read: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            data.append(contentsOf: buffer[0..<n])
        }
        return data
    }
}
