import NIOHTTP1

/// One HTTP exchange's answer. A success's body is read whole up to a bound (Sheets answers are small JSON
/// documents); an error answer's body only up to ``HTTPTransport/errorBodyLimit`` (``truncated`` then says so), so
/// that a huge error page costs neither memory nor the class of the error.
struct HTTPAnswer: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]
    /// True when the body was longer than what was kept.
    var truncated = false

    var text: String { String(decoding: body, as: UTF8.self) }
    var contentType: String { headers.first(name: "content-type")?.lowercased() ?? "" }
    var isSuccess: Bool { (200..<300).contains(status) }
}
