import Foundation
import NIOHTTP1
import SyncgateCore

/// Turns a Google API error answer (`{"error":{"code":403,"message":...,"status":"PERMISSION_DENIED"}}`) into a
/// classified ``DestinationError`` carrying Google's own message (redacted, then cut).
///
/// | answer | class, scope |
/// |---|---|
/// | 429, or `RESOURCE_EXHAUSTED` whatever the code; 503 with `Retry-After` | throttled (destination) |
/// | 401 (after one fresh token), 403, 404 | blocked (destination): the account, the sharing or the id |
/// | 3xx (never followed: the token would go along) | blocked (destination): `api_base` |
/// | 400 on a read, or `Unable to parse range` | blocked (destination): the configured range |
/// | other 400, other 4xx on a write | permanent (file): the rows themselves |
/// | 408, 409, other 5xx | retryable (file) |
enum SheetsErrorMapper {
    /// What the failed request was: a read (nothing in it comes from a file) or a write of a file's rows.
    enum Request { case read, write }

    static func error(for answer: HTTPAnswer, operation: String, request: Request) -> DestinationError {
        let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any]
        let body = object?["error"] as? [String: Any]
        let status = body?["status"] as? String
        let googleMessage = Redactor.shared.snippet((body?["message"] as? String) ?? answer.text)
        let code = status ?? "http-\(answer.status)"
        let message = "\(operation): HTTP \(answer.status)\(status.map { " \($0)" } ?? ""): \(googleMessage)"
        let after = retryAfter(answer.headers)
        if answer.status == 429 || status == "RESOURCE_EXHAUSTED" {
            return .throttled(message, code: code, after: after)
        }
        switch answer.status {
        case 503 where after != nil:
            return .throttled(message, code: code, after: after)
        case 300...399:
            // Not followed, so that the bearer token never goes to another host: api_base is not the API's root.
            let location = answer.headers.first(name: "location").map { " to \(HTTPTransport.redactQuery($0))" } ?? ""
            return .blocked("\(operation): HTTP \(answer.status) redirect\(location) not followed; check api_base", code: code)
        case 401, 403, 404:
            return .blocked(message, code: code)
        case 400 where request == .read || googleMessage.hasPrefix("Unable to parse range"):
            return .blocked(message, code: code)
        case 408, 409, 500...599:
            return .retryable(message, code: code, after: after)
        default:
            return request == .read ? .blocked(message, code: code) : .permanent(message, code: code)
        }
    }

    /// `Retry-After` as seconds (delta form) or an HTTP date.
    static func retryAfter(_ headers: HTTPHeaders) -> Duration? {
        guard let raw = headers.first(name: "retry-after") else { return nil }
        return RetryAfter.parse(raw, now: Date())
    }
}
