import Foundation
import NIOHTTP1
import SyncgateCore

/// Turns a Google API error answer (`{"error":{"code":403,"message":...,"status":"PERMISSION_DENIED"}}`) into a
/// classified ``DestinationError`` carrying Google's own message.
enum SheetsErrorMapper {
    static func error(for answer: HTTPAnswer, operation: String) -> DestinationError {
        let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any]
        let body = object?["error"] as? [String: Any]
        let status = body?["status"] as? String
        let googleMessage = (body?["message"] as? String) ?? OAuthTokenProvider.snippet(answer.text)
        let code = status ?? "http-\(answer.status)"
        let message = "\(operation): HTTP \(answer.status)\(status.map { " \($0)" } ?? ""): \(googleMessage)"
        switch answer.status {
        case 429, 500, 502, 503, 504, 408:
            return .retryable(message, code: code, after: retryAfter(answer.headers))
        default:
            return .permanent(message, code: code)
        }
    }

    /// `Retry-After` as seconds (delta form) or an HTTP date.
    static func retryAfter(_ headers: HTTPHeaders) -> Duration? {
        guard let raw = headers.first(name: "retry-after") else { return nil }
        return RetryAfter.parse(raw, now: Date())
    }
}
