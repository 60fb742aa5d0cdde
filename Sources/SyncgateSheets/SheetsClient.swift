import Foundation
import NIOHTTP1
import SyncgateCore

/// The result of `spreadsheets.values.append`: `updates.updatedRange` and `updates.updatedRows`.
struct AppendResult: Sendable {
    var updatedRange: String
    var updatedRows: Int
}

/// The two Sheets API v4 calls syncgate makes, authorised with the service account's bearer token:
/// `spreadsheets.values.append` and `spreadsheets.values.get`. A 401 drops the cached token and the call is
/// made once more with a fresh one; every other failure is returned to the caller, never retried here.
struct SheetsClient: Sendable {
    let apiBase: String
    let spreadsheetID: String
    let tokens: OAuthTokenProvider
    let transport: HTTPTransport
    let timeout: Duration

    init(apiBase: String, spreadsheetID: String, tokens: OAuthTokenProvider, transport: HTTPTransport, timeout: Duration) {
        var base = apiBase
        while base.hasSuffix("/") { base.removeLast() }
        self.apiBase = base
        self.spreadsheetID = spreadsheetID
        self.tokens = tokens
        self.transport = transport
        self.timeout = timeout
    }

    /// Percent-encodes one path segment (a range such as `'My sheet'!A:H` becomes `%27My%20sheet%27%21A%3AH`).
    static func pathSegment(_ text: String) -> String {
        var allowed = CharacterSet()
        allowed.insert(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    func valuesURL(range: String) -> String {
        "\(apiBase)/v4/spreadsheets/\(SheetsClient.pathSegment(spreadsheetID))/values/\(SheetsClient.pathSegment(range))"
    }

    /// Appends `rows` after the table found in `range` (`insertDataOption=INSERT_ROWS`).
    /// Throws ``TransportError`` when no answer came back (the outcome is then unknown), or a classified
    /// ``DestinationError`` for an error answer (nothing was applied).
    func append(range: String, rows: [[Cell]], valueInput: SheetsConfig.ValueInput) async throws -> AppendResult {
        let url = valuesURL(range: range) + ":append?valueInputOption=\(valueInput.rawValue)&insertDataOption=INSERT_ROWS"
        let body = JSONText.object([
            ("range", JSONText.string(range)),
            ("majorDimension", JSONText.string("ROWS")),
            ("values", JSONText.array(rows.map { JSONText.array($0.map(\.json)) })),
        ])
        let answer = try await authorised(.POST, url: url, body: Array(body.utf8), operation: "values.append \(range)")
        guard let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any],
            let updates = object["updates"] as? [String: Any], let updatedRange = updates["updatedRange"] as? String
        else {
            throw DestinationError.retryable(
                "values.append \(range): the answer has no updates.updatedRange: \(OAuthTokenProvider.snippet(answer.text))",
                code: "bad-response")
        }
        return AppendResult(updatedRange: updatedRange, updatedRows: (updates["updatedRows"] as? NSNumber)?.intValue ?? rows.count)
    }

    /// The values of one column (`Sheet!C:C`), as Sheets shows them (`FORMATTED_VALUE`), empty cells as "".
    func column(range: String) async throws -> [String] {
        let url = valuesURL(range: range) + "?majorDimension=COLUMNS&valueRenderOption=FORMATTED_VALUE"
        let answer = try await authorised(.GET, url: url, body: nil, operation: "values.get \(range)", maxBody: 256 << 20)
        guard let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any] else {
            throw DestinationError.retryable("values.get \(range): the answer is not JSON", code: "bad-response")
        }
        guard let values = object["values"] as? [[Any]], let first = values.first else { return [] }
        return first.map { cell in
            if let s = cell as? String { return s }
            if let n = cell as? NSNumber { return n.stringValue }
            return ""
        }
    }

    private func authorised(_ method: HTTPMethod, url: String, body: [UInt8]?, operation: String, maxBody: Int = 8 << 20) async throws -> HTTPAnswer {
        var refreshed = false
        while true {
            let token = try await tokens.token()
            var headers = [("authorization", "Bearer \(token.value.reveal())"), ("accept", "application/json")]
            if body != nil { headers.append(("content-type", "application/json; charset=utf-8")) }
            let answer = try await transport.send(method: method, url: url, headers: headers, body: body, timeout: timeout, maxBody: maxBody)
            if answer.status == 401 && !refreshed {
                // The token expired or was revoked: one fresh token, one more try (nothing was applied).
                await tokens.invalidate(token)
                refreshed = true
                continue
            }
            guard (200..<300).contains(answer.status) else {
                throw SheetsErrorMapper.error(for: answer, operation: operation)
            }
            return answer
        }
    }
}
