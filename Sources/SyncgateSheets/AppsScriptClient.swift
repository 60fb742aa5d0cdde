import Foundation
import NIOHTTP1
import SyncgateCore
import SyncgateJSON

/// Posts rows to an Apps Script web app (`https://script.google.com/macros/s/DEPLOYMENT/exec`).
///
/// Apps Script runs `doPost(e)` and answers `302 Found` with the output stored at
/// `script.googleusercontent.com/macros/echo?...`, which must be fetched with a GET (re-posting there fails).
/// A 200 is not success by itself: the JSON body must say `"ok": true`; an HTML page (a sign-in page, a script
/// error) or `"ok": false` is a failure (`"code": "missing-column"`: the sheet's header lacks a column, which
/// blocks the destination). The script maps the `columns` sent onto the sheet's header row by name and writes
/// that header when the sheet is empty (syncgate cannot read the sheet in this mode).
///
/// The body holds the secret, so it only ever goes to the configured URL's origin: a 302/303 is followed with a
/// GET without a body (Google's flow), a 307/308 (which would resend the body) only within the same origin.
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

    /// Posts one batch. Throws ``WriteOutcomeUnknown`` when the script may have run without its answer being
    /// read, and a classified ``DestinationError`` otherwise (see ``status(_:operation:afterScriptRan:)``).
    /// `beforeSending` is asked right before the batch's body goes out (``GatedBody``); what it throws is thrown as
    /// is, and then the script did not run.
    func post(
        file: String, columns: [String], keyIndex: Int, rows: [[Cell]], beforeSending: (@Sendable () throws -> Void)? = nil
    ) async throws -> Outcome {
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
        // Once the POST was answered with a redirect to the output, the script has run: a failure from then on
        // leaves the outcome unknown.
        var scriptRan = false
        while true {
            var headers = [("accept", "application/json")]
            if sendBody != nil { headers.append(("content-type", "application/json")) }
            let answer: HTTPAnswer
            do {
                answer = try await transport.send(
                    method: method, url: target, headers: headers, body: sendBody, timeout: timeout,
                    beforeBody: sendBody == nil ? nil : beforeSending)
            } catch let error as TransportError {
                if error.phase == .connect && !scriptRan { throw error.destinationError("Apps Script") }
                throw WriteOutcomeUnknown(error: .retryable("Apps Script: \(error)", code: "connection"))
            }
            switch answer.status {
            case 301, 302, 303, 307, 308:
                hops += 1
                guard hops <= AppsScriptClient.maxRedirects else {
                    throw DestinationError.blocked("Apps Script: more than \(AppsScriptClient.maxRedirects) redirects", code: "redirect-loop")
                }
                guard let location = answer.headers.first(name: "location"), let next = AppsScriptClient.resolve(location, against: target) else {
                    let error = DestinationError.retryable("Apps Script: HTTP \(answer.status) without a usable Location", code: "bad-redirect")
                    throw scriptRan ? WriteOutcomeUnknown(error: error) : error
                }
                if (answer.status == 307 || answer.status == 308) && sendBody != nil {
                    // Same method and body: only where the body may go.
                    guard AppsScriptClient.origin(of: next) == AppsScriptClient.origin(of: target) else {
                        throw DestinationError.blocked(
                            "Apps Script: HTTP \(answer.status) to another origin (\(AppsScriptClient.origin(of: next) ?? "?")) not followed: it would resend the body, secret included; check apps_script_url",
                            code: "redirect-other-origin")
                    }
                    target = next
                    continue
                }
                // The script has run; its output waits at the Location and is read with a GET, without the body.
                scriptRan = scriptRan || method == .POST
                target = next
                method = .GET
                sendBody = nil
                continue
            case 200..<300:
                return try AppsScriptClient.interpret(answer)
            default:
                if scriptRan && answer.status != 429 {
                    // The script ran; its output could not be read. Another post is safe (the script skips rows
                    // it already has).
                    throw WriteOutcomeUnknown(error: .retryable(
                        "Apps Script: the script's output could not be read: HTTP \(answer.status): \(AppsScriptClient.summary(of: answer))",
                        code: "http-\(answer.status)", after: SheetsErrorMapper.retryAfter(answer.headers)))
                }
                let error = AppsScriptClient.error(for: answer)
                throw scriptRan || answer.status >= 500 ? WriteOutcomeUnknown(error: error) : error
            }
        }
    }

    /// A non-2xx, non-redirect answer: 429, or 503 with Retry-After, throttled; 408 and 5xx retryable; 401, 403,
    /// 404 blocked (the deployment is gone or not shared); other 4xx this batch's failure.
    static func error(for answer: HTTPAnswer) -> DestinationError {
        let message = "Apps Script: HTTP \(answer.status): \(AppsScriptClient.summary(of: answer))"
        let code = "http-\(answer.status)"
        let after = SheetsErrorMapper.retryAfter(answer.headers)
        switch answer.status {
        case 429: return .throttled(message, code: code, after: after)
        case 503 where after != nil: return .throttled(message, code: code, after: after)
        case 408, 500...599: return .retryable(message, code: code, after: after)
        case 401, 403, 404: return .blocked(message, code: code)
        default: return .permanent(message, code: code)
        }
    }

    /// A 2xx answer: `"ok": true` is success, `"ok": false` this batch's failure (the script refused the rows);
    /// an HTML page (a sign-in page: the deployment is not shared with "Anyone"; a script error) or a body that
    /// is not the expected JSON blocks the destination.
    static func interpret(_ answer: HTTPAnswer) throws -> Outcome {
        let trimmed = answer.text.trimmingCharacters(in: .whitespacesAndNewlines)
        if answer.contentType.contains("text/html") || trimmed.hasPrefix("<") {
            throw DestinationError.blocked(
                "Apps Script answered with an HTML page, not JSON (\(summary(of: answer))); check that the deployment is shared with \"Anyone\" and that doPost returns ContentService JSON",
                code: "apps-script-html")
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any] else {
            throw DestinationError.blocked("Apps Script answered with something that is not a JSON object: \(OAuthTokenProvider.snippet(answer.text))", code: "apps-script-body")
        }
        guard let ok = object["ok"] as? Bool else {
            throw DestinationError.blocked("Apps Script's answer has no \"ok\" field: \(OAuthTokenProvider.snippet(answer.text))", code: "apps-script-body")
        }
        guard ok else {
            let error = Redactor.shared.snippet((object["error"] as? String) ?? "no error message")
            if (object["code"] as? String) == "missing-column" {
                // The sheet's header lacks a column the rows have: every file would meet it (a config problem).
                throw DestinationError.blocked(
                    "Apps Script: \(error); add the column to the sheet's header or change `columns`; nothing was appended",
                    code: "missing-column")
            }
            throw DestinationError.permanent("Apps Script refused the rows: \(error)", code: "apps-script-refused")
        }
        return Outcome(
            appended: (object["appended"] as? NSNumber)?.intValue, skipped: (object["skipped"] as? NSNumber)?.intValue,
            range: (object["range"] as? String).map { Redactor.shared.snippet($0, limit: 200) })
    }

    /// Checks that the web app's host answers, without running the script: a HEAD of the origin's root. A web app
    /// has no cheap read, and a GET or POST of the URL would run the user's doGet or doPost. So the probe says the
    /// destination is reachable, not that the script accepts the rows (the first post tells, and blocks it again
    /// when it does not).
    func probe() async throws {
        guard let origin = AppsScriptClient.origin(of: url) else {
            throw DestinationError.blocked("'\(url)' is not an http(s) URL", code: "config")
        }
        let answer: HTTPAnswer
        do {
            answer = try await transport.send(method: .HEAD, url: origin + "/", timeout: timeout, maxBody: 0)
        } catch let error as TransportError {
            // Any answer proves the host reachable; none at all means it is away (or the proxy refused us).
            if error.kind == .proxyAuthentication { throw error.destinationError("Apps Script probe") }
            throw DestinationError.unavailable("Apps Script probe: \(error)", code: error.phase == .connect ? "unreachable" : "connection")
        }
        if [500, 502, 503, 504].contains(answer.status) {
            throw DestinationError.unavailable(
                "Apps Script probe: HTTP \(answer.status) from \(origin)", code: "http-\(answer.status)", after: SheetsErrorMapper.retryAfter(answer.headers))
        }
    }

    /// A short description of an error answer: an HTML page's title and first error text, or the body's start;
    /// redacted before it is cut.
    static func summary(of answer: HTTPAnswer) -> String {
        let text = answer.text
        if let title = extract(text, from: "<title>", to: "</title>") {
            var summary = "title \"\(Redactor.shared.snippet(title, limit: 120))\""
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

    /// `scheme://host:port` of a URL (the port always written), or nil when it is not an http(s) URL.
    static func origin(of url: String) -> String? {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = parsed.host?.lowercased(), !host.isEmpty
        else { return nil }
        let port = parsed.port ?? (scheme == "https" ? 443 : 80)
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(bracketed):\(port)"
    }

    static func resolve(_ location: String, against base: String) -> String? {
        guard let baseURL = URL(string: base), let resolved = URL(string: location, relativeTo: baseURL)?.absoluteURL,
            let scheme = resolved.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { return nil }
        return resolved.absoluteString
    }
}
