import Foundation
import NIOHTTP1
import SyncgateCore

/// Posts rows to an Apps Script web app (`https://script.google.com/macros/s/DEPLOYMENT/exec`).
///
/// Apps Script runs `doPost(e)` and answers `302 Found` with the output stored at
/// `script.googleusercontent.com/macros/echo?...`, which must be fetched with a GET (re-posting there fails).
/// A 200 is not success by itself: the JSON body must say `"ok": true`; an HTML page (a script error, a sign-in
/// page) or `"ok": false` is a failure.
struct AppsScriptClient: Sendable {
    let url: String
    let secret: Secret?
    let transport: HTTPTransport
    let timeout: Duration
    static let maxRedirects = 5

    struct Outcome: Sendable {
        var appended: Int?
        var skipped: Int?
        var range: String?
    }

    func post(file: String, columns: [String], keyIndex: Int, rows: [[Cell]]) async throws -> Outcome {
        var members: [(String, String)] = []
        if let secret { members.append(("secret", JSONText.string(secret.reveal()))) }
        members.append(("file", JSONText.string(file)))
        members.append(("columns", JSONText.array(columns.map(JSONText.string))))
        members.append(("key_index", String(keyIndex)))
        members.append(("rows", JSONText.array(rows.map { JSONText.array($0.map(\.json)) })))
        let body = Array(JSONText.object(members).utf8)

        var method = HTTPMethod.POST
        var target = url
        var sendBody: [UInt8]? = body
        var hops = 0
        while true {
            var headers = [("accept", "application/json")]
            if sendBody != nil { headers.append(("content-type", "application/json")) }
            let answer = try await transport.send(method: method, url: target, headers: headers, body: sendBody, timeout: timeout)
            switch answer.status {
            case 301, 302, 303, 307, 308:
                hops += 1
                guard hops <= AppsScriptClient.maxRedirects else {
                    throw DestinationError.permanent("Apps Script: more than \(AppsScriptClient.maxRedirects) redirects", code: "redirect-loop")
                }
                guard let location = answer.headers.first(name: "location"), let next = AppsScriptClient.resolve(location, against: target) else {
                    throw DestinationError.retryable("Apps Script: HTTP \(answer.status) without a usable Location", code: "bad-redirect")
                }
                target = next
                if answer.status == 307 || answer.status == 308 {
                    continue  // same method and body
                }
                // The script has run; its output waits at the Location and is read with a GET.
                method = .GET
                sendBody = nil
                continue
            case 200..<300:
                return try AppsScriptClient.interpret(answer)
            default:
                let message = "Apps Script: HTTP \(answer.status): \(AppsScriptClient.summary(of: answer))"
                if answer.status == 429 || answer.status >= 500 || answer.status == 408 {
                    throw DestinationError.retryable(message, code: "http-\(answer.status)", after: SheetsErrorMapper.retryAfter(answer.headers))
                }
                throw DestinationError.permanent(message, code: "http-\(answer.status)")
            }
        }
    }

    static func interpret(_ answer: HTTPAnswer) throws -> Outcome {
        let trimmed = answer.text.trimmingCharacters(in: .whitespacesAndNewlines)
        if answer.contentType.contains("text/html") || trimmed.hasPrefix("<") {
            throw DestinationError.permanent(
                "Apps Script answered with an HTML page, not JSON (\(summary(of: answer))); check that the deployment is shared with \"Anyone\" and that doPost returns ContentService JSON",
                code: "apps-script-html")
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any] else {
            throw DestinationError.permanent("Apps Script answered with something that is not a JSON object: \(OAuthTokenProvider.snippet(answer.text))", code: "apps-script-body")
        }
        guard let ok = object["ok"] as? Bool else {
            throw DestinationError.permanent("Apps Script's answer has no \"ok\" field: \(OAuthTokenProvider.snippet(answer.text))", code: "apps-script-body")
        }
        guard ok else {
            let error = (object["error"] as? String) ?? "no error message"
            throw DestinationError.permanent("Apps Script refused the rows: \(error)", code: "apps-script-refused")
        }
        return Outcome(
            appended: (object["appended"] as? NSNumber)?.intValue, skipped: (object["skipped"] as? NSNumber)?.intValue,
            range: object["range"] as? String)
    }

    /// A short description of an error answer: an HTML page's title and first error text, or the body's start.
    static func summary(of answer: HTTPAnswer) -> String {
        let text = answer.text
        if let title = extract(text, from: "<title>", to: "</title>") {
            var summary = "title \"\(title)\""
            if let detail = extract(text, from: "<div style=\"text-align:center;font-family:monospace;margin:50px auto 0;max-width:600px\">", to: "</div>")
                ?? extract(text, from: "<body>", to: "</body>")
            {
                let plain = detail.replacingOccurrences(of: "<[^>]+>", with: " ", options: .regularExpression)
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                if !plain.isEmpty { summary += ": " + OAuthTokenProvider.snippet(plain) }
            }
            return summary
        }
        return OAuthTokenProvider.snippet(text)
    }

    static func extract(_ text: String, from start: String, to end: String) -> String? {
        guard let a = text.range(of: start, options: .caseInsensitive),
            let b = text.range(of: end, options: .caseInsensitive, range: a.upperBound..<text.endIndex)
        else { return nil }
        return String(text[a.upperBound..<b.lowerBound]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func resolve(_ location: String, against base: String) -> String? {
        guard let baseURL = URL(string: base), let resolved = URL(string: location, relativeTo: baseURL)?.absoluteURL,
            let scheme = resolved.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { return nil }
        return resolved.absoluteString
    }
}
