import Foundation
import SyncgateTestSupport
import Testing

/// The real `syncgate` binary with gcloud's application-default credentials (no `credentials_file`) against the
/// loopback server: the token cached on disk serves the next run (one token request for two runs), `validate` says
/// where the credentials come from, and a revoked refresh token blocks the destination without quoting a secret.
@Suite(
    "syncgate binary with Application Default Credentials", .serialized,
    .enabled(if: SheetsTestServer.shouldRun, "needs python3 with cryptography (scripts/test-deps.d/sheets.sh)"))
struct SheetsADCCLITests {
    let dir: TemporaryDirectory

    init() throws { dir = try TemporaryDirectory("sg-sheets-adc-cli") }

    func writeConfig(_ server: SheetsTestServer) throws {
        try dir.write("plugins.yaml", """
            version: 1
            state: .syncgate/state.sqlite
            sources:
              - name: outbox
                path: outbox
            destinations:
              - name: builds-sheet
                type: sheets
                spreadsheet_id: test-spreadsheet
                api_base: \(server.baseURL)
                rows: file
                retry: { file: 2, base_delay: 10ms, max_delay: 50ms }
            """)
    }

    /// Only the ADC file the server made; no gcloud folder, no metadata server.
    func environment(_ server: SheetsTestServer) -> [String: String] {
        ["GOOGLE_APPLICATION_CREDENTIALS": server.adcFile.path, "HOME": dir.file("home").path,
         "CLOUDSDK_CONFIG": dir.file("no-gcloud").path, "NO_GCE_CHECK": "true"]
    }

    func run(_ arguments: [String], _ server: SheetsTestServer) async throws -> ProcessResult {
        try await ProcessRunner.run(
            TestPaths.executable("syncgate"), arguments + ["--config", "plugins.yaml"], environment: environment(server), currentDirectory: dir.url)
    }

    /// The ADC file's secrets, which no output may hold.
    func secrets(_ server: SheetsTestServer) throws -> [String] {
        let adc = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: server.adcFile)) as? [String: Any])
        return [try #require(adc["refresh_token"] as? String), try #require(adc["client_secret"] as? String)]
    }

    func cacheFiles() throws -> [String] {
        let folder = dir.file(".syncgate/google-tokens").path
        guard FileManager.default.fileExists(atPath: folder) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: folder).map { folder + "/" + $0 }
    }

    @Test func twoRunsMakeOneTokenRequestInAll() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer()
        defer { server.stop() }
        try writeConfig(server)
        let hidden = try secrets(server)

        try dir.write("outbox/a.bin", "a")
        let validate = try await run(["validate"], server)
        #expect(validate.status == 0, "\(validate.stderr)")
        #expect(validate.stdout.contains("    credentials: authorized_user from \(server.adcFile.path) (GOOGLE_APPLICATION_CREDENTIALS)"), "\(validate.stdout)")
        #expect(validate.stdout.contains("    token cache: \(dir.file(".syncgate/google-tokens").path) (files of mode 0600)"), "\(validate.stdout)")

        let first = try await run(["sync", "--json"], server)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try server.stats()["token_requests"] == 1)
        let files = try cacheFiles()
        #expect(files.count == 1)
        let mode = try FileManager.default.attributesOfItem(atPath: try #require(files.first))[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // The second run (a new process, as cron starts it) uses the cached token.
        try dir.write("outbox/b.bin", "b")
        let second = try await run(["sync", "--json"], server)
        #expect(second.status == 0, "\(second.stderr)")
        let stats = try server.stats()
        #expect(stats["token_requests"] == 1, "\(stats)")
        #expect(stats["refresh_grants"] == 1)
        #expect(try server.textRows().dropFirst().map { $0[1] } == ["a.bin", "b.bin"])
        let cached = try String(contentsOfFile: try #require(files.first), encoding: .utf8)
        for text in [validate.output, first.output, second.output, cached] {
            for secret in hidden { #expect(!text.contains(secret)) }
        }
        for text in [validate.output, first.output, second.output] { #expect(!text.contains("ya29.")) }
    }

    @Test func aRevokedRefreshTokenBlocksTheDestinationWithAClearMessage() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer()
        defer { server.stop() }
        try writeConfig(server)
        let hidden = try secrets(server)
        try dir.write("outbox/a.bin", "a")
        let first = try await run(["sync", "--json"], server)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try cacheFiles().count == 1)

        // The user's access revoked: the cached token is refused (401), the refresh token too (invalid_grant).
        try server.revokeRefreshTokens()
        try server.expireTokens()
        try dir.write("outbox/b.bin", "b")
        let second = try await run(["sync", "--json"], server)
        #expect(second.status == 1, "\(second.stdout)\(second.stderr)")
        #expect(second.output.contains("invalid_grant"), "\(second.output)")
        let statusRun = try await run(["status", "--json"], server)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(statusRun.stdout.utf8)) as? [String: Any])
        let destination = try #require((report["destinations"] as? [[String: Any]])?.first)
        #expect(destination["state"] as? String == "blocked")
        let lastError = destination["last_error"] as? String ?? ""
        #expect(lastError.contains("refused (HTTP 400 invalid_grant): Token has been expired or revoked."), "\(lastError)")
        #expect(lastError.contains("run `gcloud auth application-default login` again"), "\(lastError)")
        // The refused token left the cache; nothing replaced it.
        #expect(try cacheFiles().isEmpty)
        for text in [second.output, statusRun.output] {
            for secret in hidden { #expect(!text.contains(secret)) }
            #expect(!text.contains("ya29."))
        }
        let stats = try server.stats()
        #expect(stats["token_requests"] == 2 && stats["unauthorized"] == 1)
        #expect(try server.textRows().dropFirst().map { $0[1] } == ["a.bin"])
    }
}
