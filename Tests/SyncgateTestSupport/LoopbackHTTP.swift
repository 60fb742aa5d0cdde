import Foundation

/// A minimal blocking HTTP/1.1 exchange with a test server's control endpoint on loopback (`Connection: close`,
/// the whole answer read): for the stand-ins' and proxies' control requests, never for the product's traffic.
public enum LoopbackHTTP {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The answer's body. Throws when nothing listens or the answer has no header end.
    public static func request(port: Int, _ method: String, _ path: String, body: Data = Data()) throws -> Data {
        guard let fd = Loopback.connect(port: port) else { throw Failure(description: "nothing listens on 127.0.0.1:\(port)") }
        defer { close(fd) }
        var message = Data("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8)
        message.append(body)
        _ = message.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var response = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            response.append(contentsOf: buffer[0..<n])
        }
        guard let split = response.range(of: Data("\r\n\r\n".utf8)) else {
            throw Failure(description: "a bad answer from 127.0.0.1:\(port)\(path)")
        }
        return response[split.upperBound...]
    }
}
