import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

@testable import SyncgateSheets

/// Checks the loopback server (and so what syncgate sends and expects) against Google's published discovery
/// document for the Sheets API v4 (`../shared/testdata/sheets.v4.discovery.json`).
@Suite(
    "Loopback server against Google's discovery document", .serialized,
    .enabled(if: TestPaths.sharedDirectory != nil, "needs ../shared: testdata/sheets.v4.discovery.json"),
    .enabled(if: SheetsTestServer.shouldRun, "needs python3 with cryptography (scripts/test-deps.d/sheets.sh)"))
struct DiscoverySchemaTests {
    let discovery: [String: Any]
    let schemas: [String: Any]
    let methods: [String: [String: Any]]

    init() throws {
        let url = try #require(TestPaths.shared("testdata/sheets.v4.discovery.json"))
        discovery = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        schemas = try #require(discovery["schemas"] as? [String: Any])
        let resources = discovery["resources"] as? [String: Any]
        let spreadsheets = (resources?["spreadsheets"] as? [String: Any])?["resources"] as? [String: Any]
        let values = (spreadsheets?["values"] as? [String: Any])?["methods"] as? [String: Any]
        let spreadsheetMethods = (resources?["spreadsheets"] as? [String: Any])?["methods"] as? [String: Any]
        var byID: [String: [String: Any]] = [:]
        for (_, method) in Array(values ?? [:]) + Array(spreadsheetMethods ?? [:]) {
            if let method = method as? [String: Any], let id = method["id"] as? String { byID[id] = method }
        }
        methods = byID
    }

    /// Every field of `value` must exist in `schema` with the right type (recursively, through `$ref`s).
    func violations(_ value: Any, _ schema: [String: Any], at path: String) -> [String] {
        if let ref = schema["$ref"] as? String {
            guard let target = schemas[ref] as? [String: Any] else { return ["\(path): unknown schema \(ref)"] }
            return violations(value, target, at: path)
        }
        let type = schema["type"] as? String ?? "any"
        switch type {
        case "object":
            guard let object = value as? [String: Any] else { return ["\(path): expected an object"] }
            let properties = schema["properties"] as? [String: Any] ?? [:]
            var found: [String] = []
            for (name, member) in object {
                if let property = properties[name] as? [String: Any] {
                    found += violations(member, property, at: "\(path).\(name)")
                } else if let additional = schema["additionalProperties"] as? [String: Any] {
                    found += violations(member, additional, at: "\(path).\(name)")
                } else {
                    found.append("\(path).\(name): not a field of \(schema["id"] as? String ?? "the schema")")
                }
            }
            return found
        case "array":
            guard let array = value as? [Any] else { return ["\(path): expected an array"] }
            let items = schema["items"] as? [String: Any] ?? [:]
            return array.enumerated().flatMap { violations($1, items, at: "\(path)[\($0)]") }
        case "string":
            guard let text = value as? String else { return ["\(path): expected a string"] }
            if let allowed = schema["enum"] as? [String], !allowed.contains(text) { return ["\(path): '\(text)' not in \(allowed)"] }
            return []
        case "integer":
            guard let n = value as? NSNumber, !isBool(n), n.doubleValue == n.doubleValue.rounded() else { return ["\(path): expected an integer"] }
            if schema["format"] as? String == "int32", abs(n.doubleValue) > Double(Int32.max) { return ["\(path): out of int32 range"] }
            return []
        case "number":
            guard let n = value as? NSNumber, !isBool(n) else { return ["\(path): expected a number"] }
            return []
        case "boolean":
            guard let n = value as? NSNumber, isBool(n) else { return ["\(path): expected a boolean"] }
            return []
        default:
            return []
        }
    }

    func isBool(_ n: NSNumber) -> Bool { String(cString: n.objCType) == "c" }

    /// The query and path parameters of one logged request, checked against the method's declaration.
    func parameterViolations(_ entry: [String: Any], _ method: [String: Any]) -> [String] {
        let declared = method["parameters"] as? [String: [String: Any]] ?? [:]
        let global = discovery["parameters"] as? [String: [String: Any]] ?? [:]
        var found: [String] = []
        for (name, value) in entry["query"] as? [String: String] ?? [:] {
            guard let parameter = declared[name] ?? global[name], parameter["location"] as? String == "query" else {
                found.append("query parameter \(name) is not declared")
                continue
            }
            if let allowed = parameter["enum"] as? [String], !allowed.contains(value) { found.append("\(name)=\(value) not in \(allowed)") }
            if parameter["type"] as? String == "boolean", value != "true", value != "false" { found.append("\(name)=\(value) is not a boolean") }
        }
        for (name, parameter) in declared where parameter["required"] as? Bool == true {
            if parameter["location"] as? String == "path" {
                if (entry[name] as? String)?.isEmpty != false { found.append("required path parameter \(name) missing") }
            } else if (entry["query"] as? [String: String])?[name] == nil {
                found.append("required query parameter \(name) missing")
            }
        }
        // The path has the method's flatPath shape.
        if let flat = method["flatPath"] as? String, let path = entry["path"] as? String {
            let pattern = "^/" + NSRegularExpression.escapedPattern(for: flat)
                .replacingOccurrences(of: "\\{spreadsheetId\\}", with: "[^/]+").replacingOccurrences(of: "\\{range\\}", with: "[^/]+?") + "(\\?.*)?$"
            if path.range(of: pattern, options: .regularExpression) == nil { found.append("path \(path) does not match \(flat)") }
        }
        return found
    }

    @Test func serverRequestsAndAnswersMatchTheSchema() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-schema")
        defer { dir.remove() }
        let destination = try SheetsFixtures.apiDestination(server, extra: "range: \"'Build log'!B:F\"\nmax_rows_per_request: 2", base: dir.url)
        try dir.write("a.csv", "x,y\n1,true\n2,\"3,5\"\n3,\n")
        _ = try await destination.upload(try SheetsFixtures.item(dir, "a.csv")) { _ in }
        _ = try await destination.list()
        try await destination.probe()
        await destination.finish()
        // Requests syncgate does not make but the server answers: every option of the schema.
        let token = try tokenFor(server)
        let auth = ["Authorization": "Bearer \(token)", "Content-Type": "application/json"]
        let extra: [(String, String, String?)] = [
            ("POST", "/v4/spreadsheets/test-spreadsheet/values/Sheet1%21A1:append?valueInputOption=USER_ENTERED&insertDataOption=OVERWRITE&includeValuesInResponse=true&responseValueRenderOption=UNFORMATTED_VALUE&prettyPrint=false",
             "{\"range\":\"Sheet1!A1\",\"majorDimension\":\"ROWS\",\"values\":[[1,\"a\",true,null,2.5]]}"),
            ("GET", "/v4/spreadsheets/test-spreadsheet/values/Sheet1?majorDimension=ROWS&valueRenderOption=UNFORMATTED_VALUE&dateTimeRenderOption=FORMATTED_STRING", nil),
            ("GET", "/v4/spreadsheets/test-spreadsheet/values/Empty%21A1%3AC3", nil),
            ("GET", "/v4/spreadsheets/test-spreadsheet", nil),
            ("GET", "/v4/spreadsheets/test-spreadsheet?fields=sheets.properties(sheetId,title,grid_properties.row_count),spreadsheetUrl&includeGridData=false", nil),
            ("GET", "/v4/spreadsheets/test-spreadsheet?fields=properties.title,sheets(properties(title,index))&ranges=Sheet1%21A1&ranges=Builds", nil),
        ]
        for (method, path, body) in extra {
            let answer = try SheetsTestServer.request(port: server.port, method: method, path: path, headers: auth, body: body.map { Data($0.utf8) })
            #expect(answer.status == 200, "\(method) \(path): \(answer.text)")
        }

        let log = try server.requestLog()
        #expect(log.count >= 10)
        var checkedResponses = 0
        for entry in log {
            let id = try #require(entry["methodId"] as? String)
            let method = try #require(methods[id], "\(id) is not in the discovery document")
            #expect(entry["method"] as? String == method["httpMethod"] as? String)
            #expect(parameterViolations(entry, method) == [], "\(entry["path"] ?? "")")
            if let request = entry["request"] as? [String: Any], let ref = method["request"] as? [String: Any] {
                #expect(violations(request, ref, at: "request") == [])
            }
            if entry["status"] as? Int == 200, let response = entry["response"] as? [String: Any], let ref = method["response"] as? [String: Any] {
                #expect(violations(response, ref, at: "response") == [], "\(response)")
                checkedResponses += 1
            }
        }
        #expect(checkedResponses >= 10)
        // The probe's metadata read: spreadsheets.get with the field mask of the id only.
        let probe = try #require(log.first { ($0["methodId"] as? String) == "sheets.spreadsheets.get" })
        #expect((probe["query"] as? [String: String])?["fields"] == "spreadsheetId")
        #expect((probe["response"] as? [String: Any])?.keys.sorted() == ["spreadsheetId"])
        // A mask with sub-selections and snake_case names keeps exactly what it names.
        let masked = try #require(log.first { ($0["path"] as? String)?.contains("grid_properties") == true }?["response"] as? [String: Any])
        let sheets = try #require(masked["sheets"] as? [[String: Any]])
        #expect(masked.keys.sorted() == ["sheets", "spreadsheetUrl"])
        #expect(sheets.allSatisfy { ($0["properties"] as? [String: Any])?.keys.sorted() == ["gridProperties", "sheetId", "title"] })
        // The append answer carries what the receipt stores, typed as the schema says.
        // The first is the header syncgate wrote into the empty sheet, the second the first two records.
        let appends = log.filter { ($0["methodId"] as? String) == "sheets.spreadsheets.values.append" && $0["status"] as? Int == 200 }
        let ranges = appends.compactMap { (($0["response"] as? [String: Any])?["updates"] as? [String: Any])?["updatedRange"] as? String }
        #expect(ranges.prefix(2) == ["'Build log'!B1:D1", "'Build log'!B2:D3"])
    }

    @Test func serverParameterTableMatchesTheDeclarations() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let spec = try server.spec()
        let table = try #require(spec["methods"] as? [String: [String: Any]])
        let topLevel = discovery["parameters"] as? [String: Any] ?? [:]
        for name in spec["global"] as? [String] ?? [] { #expect(topLevel[name] != nil, "global parameter \(name)") }
        #expect(Set(table.keys) == Set(["sheets.spreadsheets.values.append", "sheets.spreadsheets.values.get", "sheets.spreadsheets.get"]))
        // Every field a `fields` mask may name on the server is a field of the Spreadsheet schema.
        func unknownFields(_ tree: [String: Any], _ schema: [String: Any], at path: String) -> [String] {
            var resolved = schema
            while let ref = (resolved["$ref"] as? String) ?? ((resolved["items"] as? [String: Any])?["$ref"] as? String) {
                resolved = schemas[ref] as? [String: Any] ?? [:]
            }
            let properties = resolved["properties"] as? [String: Any] ?? [:]
            return tree.flatMap { name, sub -> [String] in
                guard let property = properties[name] as? [String: Any] else { return ["\(path)\(name)"] }
                guard let sub = sub as? [String: Any] else { return [] }
                return unknownFields(sub, property, at: "\(path)\(name).")
            }
        }
        let fields = try #require(spec["spreadsheet_fields"] as? [String: Any])
        #expect(unknownFields(fields, ["$ref": "Spreadsheet"], at: "") == [])
        #expect(fields.count >= 8)
        for (id, entry) in table {
            let method = try #require(methods[id])
            let declared = method["parameters"] as? [String: [String: Any]] ?? [:]
            // Path parameters: exactly the required ones the schema declares.
            let requiredByDiscovery = Set(declared.filter { $0.value["required"] as? Bool == true }.keys)
            #expect(Set(entry["path"] as? [String] ?? []) == requiredByDiscovery)
            #expect(Set(declared.filter { $0.value["location"] as? String == "path" }.keys) == requiredByDiscovery)
            // Query parameters: all declared, enum values a subset of the schema's.
            let query = entry["query"] as? [String: Any] ?? [:]
            #expect(Set(query.keys) == Set(declared.filter { $0.value["location"] as? String == "query" }.keys), "\(id)")
            for (name, accepted) in query {
                let parameter = try #require(declared[name])
                if let allowed = parameter["enum"] as? [String] {
                    #expect(Set(accepted as? [String] ?? ["?"]).isSubset(of: Set(allowed)), "\(id) \(name)")
                } else if parameter["type"] as? String == "boolean" {
                    #expect(Set(accepted as? [String] ?? []) == ["true", "false"], "\(id) \(name)")
                } else {
                    // Free text (the server accepts any value): a string without an enum in the schema.
                    #expect(accepted is NSNull && parameter["type"] as? String == "string", "\(id) \(name)")
                }
            }
            // A query parameter the server requires must be one the method description says the caller must give.
            let description = method["description"] as? String ?? ""
            for name in entry["required_query"] as? [String] ?? [] {
                #expect(declared[name] != nil)
                #expect(description.contains("must specify") && description.contains(name), "\(id) requires \(name)")
            }
        }
    }

    @Test func serverRefusesWhatTheAPIRefuses() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let token = try tokenFor(server)
        let auth = ["Authorization": "Bearer \(token)", "Content-Type": "application/json"]
        let body = Data("{\"values\":[[1]]}".utf8)
        let base = "/v4/spreadsheets/test-spreadsheet/values/Sheet1"
        func call(_ method: String, _ path: String, _ headers: [String: String] = auth, _ body: Data? = nil) throws -> (Int, String?, String?) {
            let answer = try SheetsTestServer.request(port: server.port, method: method, path: path, headers: headers, body: body)
            let error = (try? JSONSerialization.jsonObject(with: answer.body) as? [String: Any])?["error"] as? [String: Any]
            #expect(error == nil || (error?["code"] as? Int == answer.status && error?["message"] is String), "Google error shape")
            return (answer.status, error?["status"] as? String, error?["message"] as? String)
        }
        #expect(try call("POST", base + ":append", auth, body).0 == 400)  // valueInputOption missing
        #expect(try call("POST", base + ":append?valueInputOption=INPUT_VALUE_OPTION_UNSPECIFIED", auth, body).0 == 400)
        #expect(try call("POST", base + ":append?valueInputOption=RAW&colour=blue", auth, body).0 == 400)
        #expect(try call("POST", base + ":append?valueInputOption=RAW", auth, Data("{\"rows\":[[1]]}".utf8)).2?.contains("Unknown name \"rows\"") == true)
        #expect(try call("POST", base + ":append?valueInputOption=RAW", auth, Data("{\"range\":\"Other!A1\",\"values\":[[1]]}".utf8)).0 == 400)
        #expect(try call("POST", base + ":append?valueInputOption=RAW", auth, Data("{\"values\":[[{\"a\":1}]]}".utf8)).0 == 400)
        let unauthenticated = try call("GET", base, ["Authorization": "Bearer ya29.expired"])
        #expect(unauthenticated.0 == 401 && unauthenticated.1 == "UNAUTHENTICATED")
        #expect(try call("GET", base, [:]).0 == 401)
        #expect(try call("POST", base + ":append?valueInputOption=RAW", auth, body).0 == 200)
    }

    /// A token obtained the way the destination does (JWT signed with the server's generated key).
    func tokenFor(_ server: SheetsTestServer) throws -> String {
        let key = try ServiceAccountKey(contentsOf: server.keyFile.path)
        let signer = try JWTSigner(pem: key.privateKey.reveal(), keyID: key.privateKeyID)
        let jwt = try signer.assertion(issuer: key.clientEmail, scope: OAuthTokenProvider.scope, audience: key.tokenURI, issuedAt: Date())
        let form = "grant_type=" + OAuthTokenProvider.formEncode("urn:ietf:params:oauth:grant-type:jwt-bearer") + "&assertion=" + jwt
        let answer = try SheetsTestServer.request(
            port: server.port, method: "POST", path: "/token", headers: ["Content-Type": "application/x-www-form-urlencoded"], body: Data(form.utf8))
        let object = try JSONSerialization.jsonObject(with: answer.body) as? [String: Any]
        #expect(object?["token_type"] as? String == "Bearer")
        return try #require(object?["access_token"] as? String)
    }
}
