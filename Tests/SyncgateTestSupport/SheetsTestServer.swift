import Foundation

/// The loopback Sheets server of the tests (`Tests/SheetsServer/sheets_server.py`): the Sheets API v4 values
/// methods, an OAuth2 token endpoint verifying RS256 JWTs and answering the refresh-token grant, a GCE metadata
/// server stand-in, and an Apps Script web app. It generates a throwaway service-account key (``keyFile``) and
/// gcloud application-default credentials (``adcFile``, `authorized_user`) at start. Always ``stop()`` it (use
/// `defer`).
public final class SheetsTestServer: @unchecked Sendable {
    public let port: Int
    public let directory: TemporaryDirectory
    public let keyFile: URL
    /// gcloud's application-default file for a user of this server (`authorized_user`, its `token_uri` here).
    public let adcFile: URL
    /// gcloud application-default credentials of type `impersonated_service_account`: ``adcFile``'s login acting as
    /// ``impersonatedAccount`` through the server's IAM stand-in.
    public let impersonatedFile: URL
    /// The service account ``adcFile``'s user may act as.
    public static let impersonatedAccount = "sheets-writer@syncgate-test.iam.gserviceaccount.com"
    public let logFile: URL
    private let process: ChildProcess

    public static var script: URL { TestPaths.packageRoot.appendingPathComponent("Tests/SheetsServer/sheets_server.py") }

    /// Why the server cannot run here (no python3, or no `cryptography`), or nil when it can.
    public static let unavailableReason: String? = {
        guard ProcessRunner.which("python3") != nil else { return "python3 is not installed" }
        guard ProcessRunner.pythonHas(["cryptography"]) else {
            return "python3 has no `cryptography` module (run scripts/test-deps.d/sheets.sh)"
        }
        return nil
    }()

    /// True when tests that need the server should run (available, or required by `SYNCGATE_REQUIRE_SERVERS=1`,
    /// in which case starting it fails the test).
    public static var shouldRun: Bool { unavailableReason == nil || TestPaths.serversRequired }

    public init(
        spreadsheets: [String] = ["test-spreadsheet"], forbidden: [String] = [], writeQuota: Int = 0, quotaWindow: Double = 60,
        retryAfter: Int = 0, tokenTTL: Int = 3600, appsScriptSecret: String? = nil, echoHost: String? = nil
    ) async throws {
        if let reason = SheetsTestServer.unavailableReason { throw SheetsTestServerError(message: "cannot start the Sheets test server: \(reason)") }
        directory = try TemporaryDirectory("sheets-server")
        keyFile = directory.file("service-account.json")
        adcFile = directory.file("application_default_credentials.json")
        impersonatedFile = directory.file("impersonated_credentials.json")
        logFile = directory.file("server.log")
        var options = ["--write-adc", adcFile.path, "--write-impersonated", impersonatedFile.path, "--impersonable", SheetsTestServer.impersonatedAccount, "--write-quota", String(writeQuota), "--quota-window", String(quotaWindow), "--retry-after", String(retryAfter), "--token-ttl", String(tokenTTL)]
        for id in spreadsheets { options += ["--spreadsheet", id] }
        for id in forbidden { options += ["--forbidden", id] }
        if let appsScriptSecret { options += ["--apps-script-secret", appsScriptSecret] }
        if let echoHost { options += ["--echo-host", echoHost] }
        let logFile = self.logFile
        await ServerStartGate.shared.enter()
        defer { ServerStartGate.shared.leave() }
        var failure = ""
        // A port free a moment ago can be taken by another program (tests of other checkouts share the range):
        // then the server exits with EADDRINUSE and starts again on another port.
        for _ in 0..<3 {
            let port = Loopback.freePort()
            let arguments = [SheetsTestServer.script.path, "--port", String(port), "--write-key", keyFile.path] + options
            let process = try ProcessRunner.start(ProcessRunner.which("python3")!, ["-u"] + arguments, logFile: logFile)
            let deadline = Date().addingTimeInterval(60)
            // Checked once more after the deadline: a loaded full run has held this task past it in one sleep (the
            // server was up, listening, its key written, and was called a failure).
            var lastLook = false
            while !lastLook {
                lastLook = Date() >= deadline
                if !process.isRunning { break }
                if FileManager.default.fileExists(atPath: keyFile.path), Loopback.isListening(port: port) {
                    self.port = port
                    self.process = process
                    return
                }
                if !lastLook { try? await Task.sleep(for: .milliseconds(50)) }
            }
            let log = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
            let state = "running: \(process.isRunning), key file: \(FileManager.default.fileExists(atPath: keyFile.path)), "
                + "listening: \(Loopback.isListening(port: port))"
            ProcessRunner.stop(process)
            failure = "the Sheets test server did not start on port \(port) (\(state)): \(log)"
            guard log.contains("Address already in use") else { break }
        }
        directory.remove()
        throw SheetsTestServerError(message: failure)
    }

    deinit { stop() }

    public func stop() {
        ProcessRunner.stop(process)
        directory.remove()
    }


    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public func appsScriptURL(deployment: String = "AKfycbTEST") -> String { "\(baseURL)/macros/s/\(deployment)/exec" }

    // MARK: Control

    @discardableResult
    public func control(_ method: String, _ name: String, _ body: [String: Any]? = nil) throws -> Any {
        let data = try body.map { try JSONSerialization.data(withJSONObject: $0) }
        let answer = try SheetsTestServer.request(port: port, method: method, path: "/_control/\(name)", body: data)
        guard answer.status == 200 else { throw SheetsTestServerError(message: "control \(name): HTTP \(answer.status)") }
        return try JSONSerialization.jsonObject(with: answer.body)
    }

    /// Queues a fault: `["kind": "status", "status": 429, "count": 1, "retry_after": 1]` (Sheets API; also
    /// `"location"`, `"huge": bytes`, `"echo": "raw"|"json"|"base64"|"base64url"|"percent"|"html"` with `"pad"`),
    /// `["kind": "token", "status": 429]`, `["kind": "drop_after_append"]`, `["kind": "apps_script_html"]`,
    /// `["kind": "apps_script_not_ok", "message": ...]`, `["kind": "apps_script_answer", ...]` (the options of
    /// `status`, answering the web app's POST).
    public func fault(_ fault: [String: Any]) throws { try control("POST", "fault", fault) }

    public func expireTokens() throws { try control("POST", "expire-tokens") }

    /// Revokes the refresh token of ``adcFile``: the refresh-token grant then answers `invalid_grant`.
    public func revokeRefreshTokens() throws { try control("POST", "revoke-refresh-tokens") }

    /// `GCE_METADATA_HOST` for the metadata server stand-in (`host:port`).
    public var metadataHost: String { "127.0.0.1:\(port)" }

    /// The sheet's rows as stored (cells as sent).
    public func rows(spreadsheet: String = "test-spreadsheet", sheet: String = "Sheet1") throws -> [[Any]] {
        let path = "sheet?spreadsheet=\(spreadsheet)&sheet=\(sheet.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? sheet)"
        let object = try control("GET", path) as? [String: Any]
        return object?["values"] as? [[Any]] ?? []
    }

    /// Sets a tab's rows, as if typed into the sheet (a header row, rows already there).
    public func setRows(_ values: [[Any]], spreadsheet: String = "test-spreadsheet", sheet: String = "Sheet1") throws {
        try control("POST", "sheet", ["spreadsheet": spreadsheet, "sheet": sheet, "values": values])
    }

    /// The sheet's rows as text (numbers and booleans as JSON would print them; a cell Sheets took as a formula
    /// as `formula:` and its text).
    public func textRows(spreadsheet: String = "test-spreadsheet", sheet: String = "Sheet1") throws -> [[String]] {
        try rows(spreadsheet: spreadsheet, sheet: sheet).map { row in
            row.map { cell in
                if let s = cell as? String { return s }
                if let formula = (cell as? [String: Any])?["formula"] as? String { return "formula:" + formula }
                if let n = cell as? NSNumber {
                    if String(cString: n.objCType) == "c" { return n.boolValue ? "true" : "false" }
                    return n.stringValue
                }
                return "\(cell)"
            }
        }
    }

    public func stats() throws -> [String: Int] {
        let object = try control("GET", "stats") as? [String: Any] ?? [:]
        return object.compactMapValues { ($0 as? NSNumber)?.intValue }
    }

    /// Per append applied, in order, the number of its request as the server counted requests when it read their
    /// heads (``stats()``'s `requests_begun` at that moment).
    public func appendsBegun() throws -> [Int] {
        let object = try control("GET", "appends") as? [String: Any]
        return (object?["begun"] as? [Any] ?? []).compactMap { ($0 as? NSNumber)?.intValue }
    }

    /// Every Sheets API request the server answered (or dropped): method, methodId, query, request, status, response.
    public func requestLog() throws -> [[String: Any]] {
        let object = try control("GET", "log") as? [String: Any]
        return object?["requests"] as? [[String: Any]] ?? []
    }

    /// Every request the server received except control requests: method, path, headers, body.
    public func received() throws -> [[String: Any]] {
        let object = try control("GET", "received") as? [String: Any]
        return object?["requests"] as? [[String: Any]] ?? []
    }

    /// The server's own table of accepted and required parameters per method.
    public func spec() throws -> [String: Any] {
        try control("GET", "spec") as? [String: Any] ?? [:]
    }

    // MARK: Raw HTTP (a minimal blocking HTTP/1.1 client over a loopback socket)

    public struct Answer: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: Data
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    public static func request(
        port: Int, method: String, path: String, headers: [String: String] = [:], body: Data? = nil, timeout: TimeInterval = 10
    ) throws -> Answer {
        guard let fd = Loopback.connect(port: port, timeout: timeout) else {
            throw SheetsTestServerError(message: "cannot connect to 127.0.0.1:\(port)")
        }
        defer { close(fd) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body?.count ?? 0)\r\n\r\n"
        var out = Data(head.utf8)
        if let body { out.append(body) }
        try out.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let n = send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                guard n > 0 else { throw SheetsTestServerError(message: "send failed") }
                sent += n
            }
        }
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            received.append(contentsOf: buffer[0..<n])
        }
        guard let split = received.range(of: Data("\r\n\r\n".utf8)) else {
            throw SheetsTestServerError(message: "no HTTP answer from 127.0.0.1:\(port)\(path)")
        }
        let headText = String(decoding: received[..<split.lowerBound], as: UTF8.self)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        let status = statusLine.count > 1 ? Int(statusLine[1]) ?? 0 : 0
        var parsed: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            parsed[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Answer(status: status, headers: parsed, body: Data(received[split.upperBound...]))
    }
}

public struct SheetsTestServerError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
