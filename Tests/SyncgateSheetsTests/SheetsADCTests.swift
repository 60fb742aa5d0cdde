import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

@testable import SyncgateSheets

/// Issue 17: Google's Application Default Credentials against the loopback server, over real sockets: gcloud's
/// `authorized_user` file (through GOOGLE_APPLICATION_CREDENTIALS and through gcloud's well-known path), the GCE
/// metadata server stand-in, the disk token cache, and a revoked refresh token.
@Suite(
    "Sheets with Application Default Credentials", .serialized,
    .enabled(if: SheetsTestServer.shouldRun, "needs python3 with cryptography (scripts/test-deps.d/sheets.sh)"))
struct SheetsADCTests {
    static let blocked = Classification(.permanent, scope: .destination)
    static let unavailable = Classification(.retryable(), scope: .destination)

    let dir: TemporaryDirectory

    init() throws { dir = try TemporaryDirectory("sg-sheets-adc") }

    /// For another suite that needs ``adcSecrets(_:)``.
    init(dirForSecrets dir: TemporaryDirectory) { self.dir = dir }

    /// The environment of a machine with no credentials of its own: the chain sees only what a test gives it.
    func environment(_ extra: [String: String]) -> [String: String] {
        ["HOME": dir.file("home").path, "CLOUDSDK_CONFIG": dir.file("no-gcloud").path].merging(extra) { $1 }
    }

    func destination(_ server: SheetsTestServer, _ extra: [String: String], keys: String = "rows: file") throws -> SheetsDestination {
        try SheetsFixtures.destination(
            "spreadsheet_id: test-spreadsheet\napi_base: \(server.baseURL)\n\(keys)", base: dir.url, environment: environment(extra))
    }

    func adcSecrets(_ server: SheetsTestServer) throws -> (refresh: String, clientSecret: String) {
        let adc = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: server.adcFile)) as? [String: Any])
        return (try #require(adc["refresh_token"] as? String), try #require(adc["client_secret"] as? String))
    }

    @Test func authorizedUserThroughGoogleApplicationCredentialsSyncsRows() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let destination = try destination(server, ["GOOGLE_APPLICATION_CREDENTIALS": server.adcFile.path])
        #expect(destination.credentialsDescription == "the credentials file \(server.adcFile.path) (GOOGLE_APPLICATION_CREDENTIALS)")
        try dir.write("a.bin", "a")
        try dir.write("b.bin", "bb")
        _ = try await destination.upload(try SheetsFixtures.item(dir, "a.bin")) { _ in }
        _ = try await destination.upload(try SheetsFixtures.item(dir, "b.bin")) { _ in }
        await destination.finish()
        #expect(try server.textRows().dropFirst().map { $0[1] } == ["a.bin", "b.bin"])
        let stats = try server.stats()
        #expect(stats["refresh_grants"] == 1 && stats["jwt_grants"] == 0 && stats["token_requests"] == 1)
        // The grant as Google's libraries send it, and the quota project of the user's file on every API request.
        let received = try server.received()
        let grant = try #require(received.first { $0["path"] as? String == "/token" })
        let form = try #require(grant["body"] as? String)
        let (refresh, clientSecret) = try adcSecrets(server)
        for part in ["grant_type=refresh_token", "client_id=32555940559.apps.googleusercontent.com",
                     "refresh_token=" + OAuthTokenProvider.formEncode(refresh), "client_secret=" + OAuthTokenProvider.formEncode(clientSecret),
                     "scope=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fspreadsheets"] {
            #expect(form.split(separator: "&").contains(Substring(part)), "\(part)")
        }
        let apiRequests = received.filter { ($0["path"] as? String)?.hasPrefix("/v4/") == true }
        #expect(apiRequests.count >= 3)
        for request in apiRequests {
            let headers = request["headers"] as? [String: String] ?? [:]
            #expect(headers.first { $0.key.lowercased() == "x-goog-user-project" }?.value == "syncgate-test-quota", "\(headers)")
        }
    }

    @Test func authorizedUserAtGcloudsWellKnownPathSyncsRows() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let gcloud = dir.file("gcloud-config")
        try dir.write("gcloud-config/application_default_credentials.json", try Data(contentsOf: server.adcFile))
        // GOOGLE_APPLICATION_CREDENTIALS empty counts as unset; no metadata server (a wrong pick would fail).
        let destination = try destination(server, ["CLOUDSDK_CONFIG": gcloud.path, "GOOGLE_APPLICATION_CREDENTIALS": "", "NO_GCE_CHECK": "true"])
        #expect(destination.credentialsDescription?.hasSuffix("(gcloud application-default login)") == true)
        try dir.write("a.bin", "a")
        _ = try await destination.upload(try SheetsFixtures.item(dir, "a.bin")) { _ in }
        await destination.finish()
        #expect(try server.textRows().dropFirst().map { $0[1] } == ["a.bin"])
        #expect(try server.stats()["refresh_grants"] == 1)
        // ~/.config/gcloud when CLOUDSDK_CONFIG is not set.
        try dir.write("home/.config/gcloud/application_default_credentials.json", try Data(contentsOf: server.adcFile))
        let viaHome = try SheetsFixtures.destination(
            "spreadsheet_id: test-spreadsheet\napi_base: \(server.baseURL)\nrows: file", base: dir.url,
            environment: ["HOME": dir.file("home").path, "NO_GCE_CHECK": "true"])
        #expect(viaHome.credentialsDescription == "the credentials file \(dir.file("home").path)/.config/gcloud/application_default_credentials.json (gcloud application-default login)")
        try await viaHome.probe()
        await viaHome.finish()
    }

    @Test func metadataServerStandInSyncsRowsAndRefusesRequestsWithoutTheFlavorHeader() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer()
        defer { server.stop() }
        // The stand-in refuses a request without `Metadata-Flavor: Google`, as Google's does, and says who it is.
        let tokenPath = "/computeMetadata/v1/instance/service-accounts/default/token"
        let bare = try SheetsTestServer.request(port: server.port, method: "GET", path: tokenPath)
        #expect(bare.status == 403)
        #expect(bare.headers["metadata-flavor"] == "Google")
        let forwarded = try SheetsTestServer.request(
            port: server.port, method: "GET", path: tokenPath, headers: ["Metadata-Flavor": "Google", "X-Forwarded-For": "10.1.2.3"])
        #expect(forwarded.status == 403)
        let asked = try SheetsTestServer.request(port: server.port, method: "GET", path: tokenPath, headers: ["Metadata-Flavor": "Google"])
        #expect(asked.status == 200 && asked.headers["metadata-flavor"] == "Google")
        let answer = try #require(try JSONSerialization.jsonObject(with: asked.body) as? [String: Any])
        #expect(Set(answer.keys) == ["access_token", "expires_in", "token_type"])
        #expect(answer["token_type"] as? String == "Bearer")
        #expect(try server.stats()["metadata_refused"] == 2)

        let destination = try destination(server, ["GCE_METADATA_HOST": server.metadataHost])
        #expect(destination.credentialsDescription == "the GCE metadata server at http://\(server.metadataHost) (the instance's default service account)")
        try dir.write("a.bin", "a")
        _ = try await destination.upload(try SheetsFixtures.item(dir, "a.bin")) { _ in }
        await destination.finish()
        #expect(try server.textRows().dropFirst().map { $0[1] } == ["a.bin"])
        let stats = try server.stats()
        #expect(stats["metadata_tokens"] == 2)  // the raw request above, and syncgate's
        #expect(stats["metadata_refused"] == 2)  // syncgate's request was not refused: it sent the header
        let ours = try server.received().filter { ($0["path"] as? String)?.hasPrefix(tokenPath) == true }.last
        #expect(ours?["path"] as? String == tokenPath + "?scopes=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fspreadsheets")
        #expect((ours?["headers"] as? [String: String])?.first { $0.key.lowercased() == "metadata-flavor" }?.value == "Google")
    }

    @Test func aMetadataAddressThatIsNotGooglesFailsClearly() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer()
        defer { server.stop() }
        try dir.write("a.bin", "a")
        // Nothing listening there (a machine off Google Cloud): unavailable at once, naming what was looked at.
        let closed = Loopback.freePort()
        let off = try destination(server, ["GCE_METADATA_HOST": "127.0.0.1:\(closed)"])
        let started = ContinuousClock.now
        let offError = await SheetsFixtures.uploadError(off, try SheetsFixtures.item(dir, "a.bin"))
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(offError?.classification == Self.unavailable)
        let message = offError?.message ?? ""
        for part in ["no Google credentials", "credentials_file is not set", "GOOGLE_APPLICATION_CREDENTIALS is not set",
                     "application_default_credentials.json does not exist", "GCE metadata server at http://127.0.0.1:\(closed) cannot be reached",
                     "NO_GCE_CHECK=true"] {
            #expect(message.contains(part), "\(part): \(message)")
        }
        await off.finish()
        // Something else answers there (the Sheets API's 404, without Metadata-Flavor): not taken for the server.
        let impostor = try destination(server, ["GCE_METADATA_HOST": "127.0.0.1:\(server.port)/v4"])
        let impostorError = await SheetsFixtures.uploadError(impostor, try SheetsFixtures.item(dir, "a.bin"))
        #expect(impostorError?.classification == Self.blocked)
        #expect(impostorError?.code == "metadata-flavor")
        #expect(impostorError?.message.contains("not Google's metadata server") == true, "\(String(describing: impostorError))")
        await impostor.finish()
        #expect(try server.stats()["appends"] == 0)
    }

    @Test func theDiskCacheServesALaterRunAndA401ReplacesIt() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let env = ["GOOGLE_APPLICATION_CREDENTIALS": server.adcFile.path]
        try dir.write("a.bin", "a")
        try dir.write("b.bin", "b")
        try dir.write("c.bin", "c")
        let first = try destination(server, env)
        _ = try await first.upload(try SheetsFixtures.item(dir, "a.bin")) { _ in }
        await first.finish()
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.file("google-tokens").path)
        #expect(files.count == 1)
        let cacheFile = dir.file("google-tokens/" + (files.first ?? "")).path
        let attributes = try FileManager.default.attributesOfItem(atPath: cacheFile)
        #expect(attributes[.posixPermissions] as? Int == 0o600)
        let cached = try String(contentsOfFile: cacheFile, encoding: .utf8)
        let (refresh, clientSecret) = try adcSecrets(server)
        #expect(!cached.contains(refresh) && !cached.contains(clientSecret) && cached.contains("ya29.test-"))

        // A second "run" (a new destination, as a new process makes): the cached token, no exchange.
        let second = try destination(server, env)
        _ = try await second.upload(try SheetsFixtures.item(dir, "b.bin")) { _ in }
        #expect(try server.stats()["token_requests"] == 1)
        #expect(await second.tokens?.exchanges == 0)
        // The server forgets its tokens: the 401 drops the cached one, a new one is fetched and cached.
        try server.expireTokens()
        _ = try await second.upload(try SheetsFixtures.item(dir, "c.bin")) { _ in }
        await second.finish()
        let stats = try server.stats()
        #expect(stats["token_requests"] == 2 && stats["unauthorized"] == 1)
        let replaced = try String(contentsOfFile: cacheFile, encoding: .utf8)
        #expect(replaced != cached)
        #expect(try server.textRows().dropFirst().map { $0[1] } == ["a.bin", "b.bin", "c.bin"])
    }

    @Test func aRevokedRefreshTokenBlocksTheDestinationWithoutQuotingASecret() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer()
        defer { server.stop() }
        try server.revokeRefreshTokens()
        try dir.write("a.bin", "a")
        let destination = try destination(server, ["GOOGLE_APPLICATION_CREDENTIALS": server.adcFile.path])
        let error = await SheetsFixtures.uploadError(destination, try SheetsFixtures.item(dir, "a.bin"))
        #expect(error?.classification == Self.blocked)
        #expect(error?.code == "invalid_grant")
        let message = error?.message ?? ""
        #expect(message.contains("HTTP 400 invalid_grant): Token has been expired or revoked."), "\(message)")
        #expect(message.contains("run `gcloud auth application-default login` again"), "\(message)")
        let (refresh, clientSecret) = try adcSecrets(server)
        #expect(!message.contains(refresh) && !message.contains(clientSecret))
        #expect(await SheetsErrorScopeProbe.error(destination)?.classification == Self.blocked)
        await destination.finish()
        // A login without the Sheets scope, and an OAuth client the endpoint does not know, are refused as clearly.
        try server.fault(["kind": "token", "status": 400, "error": "invalid_scope", "message": "Bad Request"])
        let unscoped = try self.destination(server, ["GOOGLE_APPLICATION_CREDENTIALS": server.adcFile.path])
        let scopeError = await SheetsFixtures.uploadError(unscoped, try SheetsFixtures.item(dir, "a.bin"))
        #expect(scopeError?.classification == Self.blocked && scopeError?.code == "invalid_scope")
        #expect(scopeError?.message.contains("--scopes=https://www.googleapis.com/auth/spreadsheets,") == true, "\(String(describing: scopeError))")
        await unscoped.finish()
        var adc = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: server.adcFile)) as? [String: Any])
        adc["client_secret"] = "not-the-secret-\(UUID().uuidString)"
        let wrongClient = try dir.write("wrong-client.json", try JSONSerialization.data(withJSONObject: adc))
        let other = try self.destination(server, ["GOOGLE_APPLICATION_CREDENTIALS": wrongClient.path])
        let clientError = await SheetsFixtures.uploadError(other, try SheetsFixtures.item(dir, "a.bin"))
        #expect(clientError?.classification == Self.blocked && clientError?.code == "invalid_client")
        #expect(clientError?.message.contains("names an OAuth client") == true && clientError?.message.contains(adc["client_secret"] as! String) == false)
        await other.finish()
        #expect(try server.stats()["appends"] == 0)
    }
}

/// `impersonated_service_account` credentials (gcloud's `--impersonate-service-account`): the user's login gets a
/// cloud-platform token, IAM's `generateAccessToken` turns it into the service account's Sheets token, and the API
/// is called with that one; what IAM refuses blocks, throttles or retries the destination as it says.
@Suite(
    "Sheets with an impersonated service account", .serialized,
    .enabled(if: SheetsTestServer.shouldRun, "needs python3 with cryptography (scripts/test-deps.d/sheets.sh)"))
struct SheetsImpersonationTests {
    let dir: TemporaryDirectory

    init() throws { dir = try TemporaryDirectory("sg-sheets-impersonated") }

    func destination(_ server: SheetsTestServer, credentials: URL) throws -> SheetsDestination {
        try SheetsFixtures.destination(
            "spreadsheet_id: test-spreadsheet\napi_base: \(server.baseURL)\nrows: file\ncredentials_file: \(credentials.path)", base: dir.url,
            environment: ["HOME": dir.file("home").path, "CLOUDSDK_CONFIG": dir.file("no-gcloud").path, "NO_GCE_CHECK": "true"])
    }

    func impersonating(_ server: SheetsTestServer, account: String? = nil, sourceKey: Bool = false) throws -> URL {
        var file = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: server.impersonatedFile)) as? [String: Any])
        if let account {
            file["service_account_impersonation_url"] = "\(server.baseURL)/v1/projects/-/serviceAccounts/\(account):generateAccessToken"
        }
        if sourceKey {  // a service-account key acting as another account, as a CI job's key might
            file["source_credentials"] = try JSONSerialization.jsonObject(with: Data(contentsOf: server.keyFile))
        }
        return try dir.write("impersonated-\(UUID().uuidString).json", try JSONSerialization.data(withJSONObject: file))
    }

    @Test func anImpersonatedServiceAccountSyncsRowsWithItsOwnToken() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let destination = try destination(server, credentials: server.impersonatedFile)
        try dir.write("a.bin", "a")
        try dir.write("b.bin", "bb")
        _ = try await destination.upload(try SheetsFixtures.item(dir, "a.bin")) { _ in }
        _ = try await destination.upload(try SheetsFixtures.item(dir, "b.bin")) { _ in }
        await destination.finish()
        #expect(try server.textRows().dropFirst().map { $0[1] } == ["a.bin", "b.bin"])
        let stats = try server.stats()
        #expect(stats["refresh_grants"] == 1 && stats["impersonations"] == 1 && stats["jwt_grants"] == 0, "\(stats)")
        // The user's token was asked with the cloud-platform scope, IAM with the Sheets scope, and the API was called
        // with the token IAM gave, never the user's own.
        let received = try server.received()
        let grant = try #require(received.first { $0["path"] as? String == "/token" }?["body"] as? String)
        #expect(grant.split(separator: "&").contains("scope=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcloud-platform"), "\(grant)")
        let iam = try #require(received.first { ($0["path"] as? String)?.hasSuffix(":generateAccessToken") == true })
        #expect(iam["path"] as? String == "/v1/projects/-/serviceAccounts/\(SheetsTestServer.impersonatedAccount):generateAccessToken")
        let body = try #require(try JSONSerialization.jsonObject(with: Data((iam["body"] as? String ?? "").utf8)) as? [String: Any])
        #expect(body["scope"] as? [String] == ["https://www.googleapis.com/auth/spreadsheets"] && body["lifetime"] as? String == "3600s", "\(body)")
        let bearers = Set(received.filter { ($0["path"] as? String)?.hasPrefix("/v4/") == true }.compactMap { request -> String? in
            (request["headers"] as? [String: String])?.first { $0.key.lowercased() == "authorization" }?.value
        })
        let iamBearer = (iam["headers"] as? [String: String])?.first { $0.key.lowercased() == "authorization" }?.value
        #expect(bearers.count == 1 && iamBearer != nil && !bearers.contains(iamBearer!), "the API gets the impersonated token: \(bearers)")
        // validate names the type.
        #expect(destination.credentialsDescription == "the credentials file \(server.impersonatedFile.path) (credentials_file)")
    }

    @Test func aServiceAccountKeyCanBeTheSource() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let destination = try destination(server, credentials: try impersonating(server, sourceKey: true))
        try dir.write("a.bin", "a")
        _ = try await destination.upload(try SheetsFixtures.item(dir, "a.bin")) { _ in }
        await destination.finish()
        #expect(try server.textRows().dropFirst().map { $0[1] } == ["a.bin"])
        let stats = try server.stats()
        #expect(stats["jwt_grants"] == 1 && stats["impersonations"] == 1 && stats["refresh_grants"] == 0, "\(stats)")
    }

    @Test func whatIAMRefusesBlocksThrottlesOrRetries() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer()
        defer { server.stop() }
        try dir.write("a.bin", "a")
        let (refresh, clientSecret) = try SheetsADCTests(dirForSecrets: dir).adcSecrets(server)

        // An account the user may not act as (or that does not exist): blocked, saying which role is missing.
        let other = try destination(server, credentials: try impersonating(server, account: "someone-else@syncgate-test.iam.gserviceaccount.com"))
        let denied = await SheetsFixtures.uploadError(other, try SheetsFixtures.item(dir, "a.bin"))
        #expect(denied?.classification == SheetsADCTests.blocked && denied?.code == "PERMISSION_DENIED", "\(String(describing: denied))")
        #expect(denied?.message.contains("roles/iam.serviceAccountTokenCreator on someone-else@syncgate-test.iam.gserviceaccount.com") == true,
                "\(String(describing: denied))")
        #expect(denied?.message.contains(refresh) == false && denied?.message.contains(clientSecret) == false)
        await other.finish()

        // IAM overloaded (429) throttles; a 503 without Retry-After is retried.
        try server.fault(["kind": "impersonate", "status": 429, "retry_after": 1])
        let busy = try destination(server, credentials: server.impersonatedFile)
        let throttled = await SheetsFixtures.uploadError(busy, try SheetsFixtures.item(dir, "a.bin"))
        #expect(throttled?.classification.scope == .destination && throttled?.code == "RESOURCE_EXHAUSTED", "\(String(describing: throttled))")
        await busy.finish()
        try server.fault(["kind": "impersonate", "status": 503])
        let down = try destination(server, credentials: server.impersonatedFile)
        let retried = await SheetsFixtures.uploadError(down, try SheetsFixtures.item(dir, "a.bin"))
        let isRetryable: Bool = { if case .retryable? = retried?.failureClass { return true } else { return false } }()
        #expect(isRetryable && retried?.code == "UNAVAILABLE", "\(String(describing: retried))")
        await down.finish()

        // A revoked login: the source's grant is refused before IAM is asked.
        try server.revokeRefreshTokens()
        let revoked = try destination(server, credentials: server.impersonatedFile)
        let grant = await SheetsFixtures.uploadError(revoked, try SheetsFixtures.item(dir, "a.bin"))
        #expect(grant?.classification == SheetsADCTests.blocked && grant?.code == "invalid_grant", "\(String(describing: grant))")
        await revoked.finish()
        #expect(try server.stats()["appends"] == 0)
    }

    /// A file without the impersonation URL or the source credentials, or whose source is an impersonation itself,
    /// is refused by name, without quoting a secret.
    @Test func aBrokenImpersonationFileIsRefusedClearly() throws {
        defer { dir.remove() }
        let source: [String: Any] = ["type": "authorized_user", "client_id": "c", "client_secret": "s3cret-client-value", "refresh_token": "1//r3fresh-value"]
        let cases: [([String: Any], String)] = [
            (["type": "impersonated_service_account", "source_credentials": source], "has no service_account_impersonation_url"),
            (["type": "impersonated_service_account", "service_account_impersonation_url": "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/a@b.iam.gserviceaccount.com:generateAccessToken"],
             "has no source_credentials"),
            (["type": "impersonated_service_account", "service_account_impersonation_url": "ftp://example/x", "source_credentials": source],
             "not an http(s) URL ending in :generateAccessToken"),
            (["type": "impersonated_service_account",
              "service_account_impersonation_url": "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/a@b.iam.gserviceaccount.com:generateAccessToken",
              "source_credentials": ["type": "impersonated_service_account"]], "cannot be an impersonation themselves"),
        ]
        for (fields, expected) in cases {
            let data = try JSONSerialization.data(withJSONObject: fields)
            do {
                _ = try GoogleCredentialsFile(json: data, source: "creds.json")
                Issue.record("accepted: \(fields)")
            } catch let error as DestinationError {
                #expect(error.message.contains(expected), "\(error.message)")
                #expect(!error.message.contains("s3cret-client-value") && !error.message.contains("r3fresh-value"))
            }
        }
    }
}

/// A probe's error (nil when it succeeds, which the caller's expectation then reports).
enum SheetsErrorScopeProbe {
    static func error(_ destination: SheetsDestination) async -> DestinationError? {
        do {
            try await destination.probe()
            return nil
        } catch {
            return error as? DestinationError
        }
    }
}
