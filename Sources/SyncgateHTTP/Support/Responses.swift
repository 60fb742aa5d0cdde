import HTTPTypes
import Hummingbird

/// Answers with a body of a given type.
enum Responses {
    static func json(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        make(text, type: "application/json; charset=utf-8", status: status)
    }

    static func text(_ text: String, status: HTTPResponse.Status = .ok, type: String = "text/plain; charset=utf-8") -> Response {
        make(text, type: type, status: status)
    }

    static func make(_ text: String, type: String, status: HTTPResponse.Status = .ok, headers extra: HTTPFields = [:]) -> Response {
        var headers: HTTPFields = [.contentType: type]
        headers.append(contentsOf: extra)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
