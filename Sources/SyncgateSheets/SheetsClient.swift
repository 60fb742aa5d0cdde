import Foundation
import NIOHTTP1
import SyncgateCore
import SyncgateJSON

/// The result of `spreadsheets.values.append`: `updates.updatedRange` and `updates.updatedRows`.
struct AppendResult: Sendable {
    var updatedRange: String
    var updatedRows: Int
}

/// The three Sheets API v4 calls syncgate makes, authorised with the credentials' bearer token (and, for user
/// credentials that name one, the quota project in `x-goog-user-project`, as Google's libraries send it):
/// `spreadsheets.values.append`, `spreadsheets.values.get` and (for ``SheetsDestination/probe()``)
/// `spreadsheets.get` with a field mask. A 401 drops the cached token and the call is made once more with a fresh
/// one; every other failure is returned to the caller, never retried here. Redirects are not followed (the bearer
/// token would go along).
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
    /// Throws ``WriteOutcomeUnknown`` when the rows may have been applied (no answer, a 5xx, an unreadable
    /// success), or a classified ``DestinationError`` when they were not.
    /// `beforeSending` is asked right before the rows go out (the caller's write fence, ``GatedBody``): what it throws
    /// is thrown as is, and then nothing was applied.
    func append(
        range: String, rows: [[Cell]], valueInput: SheetsConfig.ValueInput, beforeSending: (@Sendable () throws -> Void)? = nil
    ) async throws -> AppendResult {
        let url = valuesURL(range: range) + ":append?valueInputOption=\(valueInput.rawValue)&insertDataOption=INSERT_ROWS"
        let body = JSONText.object([
            ("range", JSONText.string(range)),
            ("majorDimension", JSONText.string("ROWS")),
            ("values", JSONText.array(rows.map { JSONText.array($0.map(\.json)) })),
        ])
        let operation = "values.append \(range)"
        let answer: HTTPAnswer
        do {
            answer = try await authorised(
                .POST, url: url, body: Array(body.utf8), operation: operation, request: .write, beforeBody: beforeSending)
        } catch let error as TransportError {
            switch error.phase {
            case .connect: throw error.destinationError(operation)  // nothing was sent
            case .exchange:
                throw WriteOutcomeUnknown(error: .retryable(
                    "append of \(rows.count) rows: \(error) (the rows are checked before they are sent again)", code: "connection"))
            }
        } catch let error as SheetsClient.Refusal {
            // A 5xx (503 with Retry-After included) may come after the write was applied; a 4xx, 429 included,
            // means it was not.
            if error.status >= 500 { throw WriteOutcomeUnknown(error: error.error) }
            throw error.error
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any],
            let updates = object["updates"] as? [String: Any], let updatedRange = updates["updatedRange"] as? String
        else {
            throw WriteOutcomeUnknown(error: .retryable(
                "\(operation): the answer has no updates.updatedRange: \(OAuthTokenProvider.snippet(answer.text))",
                code: "bad-response"))
        }
        return AppendResult(updatedRange: updatedRange, updatedRows: (updates["updatedRows"] as? NSNumber)?.intValue ?? rows.count)
    }

    /// The values of one column (`Sheet!C:C`), as Sheets shows them (`FORMATTED_VALUE`), empty cells as "".
    func column(range: String) async throws -> [String] {
        let url = valuesURL(range: range) + "?majorDimension=COLUMNS&valueRenderOption=FORMATTED_VALUE"
        let operation = "values.get \(range)"
        let answer = try await read(url: url, operation: operation, maxBody: 256 << 20)
        guard let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any] else {
            throw DestinationError.retryable("\(operation): the answer is not JSON", code: "bad-response")
        }
        guard let values = object["values"] as? [[Any]], let first = values.first else { return [] }
        return first.map { cell in
            if let s = cell as? String { return s }
            if let n = cell as? NSNumber { return n.stringValue }
            return ""
        }
    }

    /// The values of the first row of `range` (`Builds!A1:H1`, `Sheet1!1:1`), as Sheets shows them, empty cells
    /// as ""; empty when the row is. A few hundred bytes: the answer is read up to 1 MiB.
    func firstRow(range: String) async throws -> [String] {
        let url = valuesURL(range: range) + "?majorDimension=ROWS&valueRenderOption=FORMATTED_VALUE"
        let operation = "values.get \(range)"
        let answer = try await read(url: url, operation: operation, maxBody: 1 << 20)
        guard let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any] else {
            throw DestinationError.retryable("\(operation): the answer is not JSON", code: "bad-response")
        }
        guard let values = object["values"] as? [[Any]], let first = values.first else { return [] }
        return first.map { cell in
            if let s = cell as? String { return s }
            if let n = cell as? NSNumber { return n.stringValue }
            return ""
        }
    }

    /// The field mask of the metadata read ``metadata()`` makes: the id only (a few bytes, whatever the sheet holds).
    static let metadataFields = "spreadsheetId"

    /// `spreadsheets.get` with a field mask: the cheapest request that needs a token, the spreadsheet to exist and
    /// the service account to be allowed to open it. Returns the spreadsheet id the API answered with.
    func metadata() async throws -> String {
        let url = "\(apiBase)/v4/spreadsheets/\(SheetsClient.pathSegment(spreadsheetID))?fields=\(SheetsClient.metadataFields)"
        let operation = "spreadsheets.get \(spreadsheetID)"
        let answer = try await read(url: url, operation: operation, maxBody: 1 << 20)
        guard let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any],
            let id = object["spreadsheetId"] as? String
        else {
            throw DestinationError.blocked(
                "\(operation): the answer is not a Spreadsheet: \(OAuthTokenProvider.snippet(answer.text)); check api_base", code: "bad-response")
        }
        return id
    }

    /// A read: every failure is a ``DestinationError``.
    private func read(url: String, operation: String, maxBody: Int) async throws -> HTTPAnswer {
        do {
            return try await authorised(.GET, url: url, body: nil, operation: operation, request: .read, maxBody: maxBody)
        } catch let error as TransportError {
            throw error.destinationError(operation)
        } catch let error as SheetsClient.Refusal {
            throw error.error
        }
    }

    /// An error answer: its HTTP status and the classified error.
    struct Refusal: Error {
        var status: Int
        var error: DestinationError
    }

    /// Sends a request with the bearer token. A 401 drops the token and the request is sent once more with a fresh
    /// one (nothing was applied). Throws ``TransportError`` (no answer), ``Refusal`` (an error answer), or the
    /// token's ``DestinationError``.
    private func authorised(
        _ method: HTTPMethod, url: String, body: [UInt8]?, operation: String, request: SheetsErrorMapper.Request, maxBody: Int = 8 << 20,
        beforeBody: (@Sendable () throws -> Void)? = nil
    ) async throws -> HTTPAnswer {
        var refreshed = false
        while true {
            let token = try await tokens.token()
            var headers = [("authorization", "Bearer \(token.value.reveal())"), ("accept", "application/json")]
            if let project = await tokens.quotaProject { headers.append(("x-goog-user-project", project)) }
            if body != nil { headers.append(("content-type", "application/json; charset=utf-8")) }
            let answer = try await transport.send(
                method: method, url: url, headers: headers, body: body, timeout: timeout, maxBody: maxBody, beforeBody: beforeBody)
            if answer.status == 401 && !refreshed {
                // The token expired or was revoked: one fresh token, one more try (nothing was applied).
                await tokens.invalidate(token)
                refreshed = true
                continue
            }
            guard answer.isSuccess else {
                throw Refusal(status: answer.status, error: SheetsErrorMapper.error(for: answer, operation: operation, request: request))
            }
            return answer
        }
    }
}
