import Crypto
import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

@testable import SyncgateSheets

/// The Application Default Credentials chain (no network): its order, the links' variables, the credentials files'
/// types, and the config errors and `validate` lines they give.
@Suite("Google credential chain")
struct GoogleCredentialChainTests {
    let dir: TemporaryDirectory

    init() throws { dir = try TemporaryDirectory("sg-adc-chain") }

    static let serviceAccountJSON = """
        {"type": "service_account", "client_email": "sa@p.iam.gserviceaccount.com", "private_key_id": "k1",
         "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\\n"}
        """

    func authorizedUserJSON(refresh: String = "1//refresh-\(UUID().uuidString)", secret: String = "client-secret-\(UUID().uuidString)", extra: String = "") -> String {
        """
        {"type": "authorized_user", "client_id": "1234.apps.googleusercontent.com", "client_secret": "\(secret)",
         "refresh_token": "\(refresh)"\(extra)}
        """
    }

    func resolve(_ file: String? = nil, _ environment: [String: String]) throws -> GoogleCredentialSource {
        try GoogleCredentialChain.resolve(credentialsFile: file, environment: environment)
    }

    @Test func eachLinkInGooglesOrder() throws {
        defer { dir.remove() }
        let gcloud = dir.file("gcloud")
        try dir.write("gcloud/application_default_credentials.json", authorizedUserJSON())
        try dir.write("home/.config/gcloud/application_default_credentials.json", authorizedUserJSON())
        let home = dir.file("home").path
        var env = ["HOME": home, "CLOUDSDK_CONFIG": gcloud.path, "GOOGLE_APPLICATION_CREDENTIALS": "/keys/env.json", "GCE_METADATA_HOST": "127.0.0.1:9"]

        // 1. the config's credentials_file, whatever else is there
        #expect(try resolve("/keys/config.json", env) == .file(path: "/keys/config.json", origin: .config))
        // 2. GOOGLE_APPLICATION_CREDENTIALS (used even though the file is not there: the error names it at use)
        #expect(try resolve(nil, env) == .file(path: "/keys/env.json", origin: .environment))
        env["GOOGLE_APPLICATION_CREDENTIALS"] = ""  // empty is unset
        // 3. gcloud's file, in CLOUDSDK_CONFIG ...
        #expect(try resolve(nil, env) == .file(path: gcloud.path + "/application_default_credentials.json", origin: .gcloud))
        // ... else in ~/.config/gcloud
        env["CLOUDSDK_CONFIG"] = nil
        #expect(try resolve(nil, env) == .file(path: home + "/.config/gcloud/application_default_credentials.json", origin: .gcloud))
        // 4. the metadata server, at GCE_METADATA_HOST
        try FileManager.default.removeItem(at: dir.file("home/.config"))
        guard case .metadataServer(let base, let lookedAt) = try resolve(nil, env) else {
            Issue.record("expected the metadata server")
            return
        }
        #expect(base == "http://127.0.0.1:9")
        #expect(lookedAt == [
            "credentials_file is not set", "GOOGLE_APPLICATION_CREDENTIALS is not set",
            "\(home)/.config/gcloud/application_default_credentials.json does not exist",
        ])
        // A gcloud config folder holding no file: looked at, passed by.
        env["CLOUDSDK_CONFIG"] = dir.file("empty-gcloud").path
        #expect(try resolve(nil, env) == .metadataServer(baseURL: "http://127.0.0.1:9", lookedAt: [
            "credentials_file is not set", "GOOGLE_APPLICATION_CREDENTIALS is not set",
            "\(dir.file("empty-gcloud").path)/application_default_credentials.json does not exist",
        ]))
    }

    @Test func homeRelativePathsAndTheMetadataAddress() throws {
        #expect(try resolve(nil, ["HOME": "/home/u", "GOOGLE_APPLICATION_CREDENTIALS": "~/keys/sa.json"])
            == .file(path: "/home/u/keys/sa.json", origin: .environment))
        #expect(GoogleCredentialChain.gcloudFile(environment: ["CLOUDSDK_CONFIG": "~/gc"], home: "/home/u") == "/home/u/gc/application_default_credentials.json")
        #expect(GoogleCredentialChain.metadataBaseURL([:]) == "http://169.254.169.254")
        #expect(GoogleCredentialChain.metadataBaseURL(["GCE_METADATA_ROOT": "metadata.google.internal"]) == "http://metadata.google.internal")
        #expect(GoogleCredentialChain.metadataBaseURL(["GCE_METADATA_HOST": "127.0.0.1:8080", "GCE_METADATA_ROOT": "other"]) == "http://127.0.0.1:8080")
        #expect(GoogleCredentialChain.metadataBaseURL(["GCE_METADATA_HOST": "http://10.0.0.1/"]) == "http://10.0.0.1")
        for value in ["true", "True", "TRUE", "1"] { #expect(GoogleCredentialChain.metadataServerDisabled(["NO_GCE_CHECK": value])) }
        for value in ["false", "0", ""] { #expect(!GoogleCredentialChain.metadataServerDisabled(["NO_GCE_CHECK": value])) }
        #expect(!GoogleCredentialChain.metadataServerDisabled([:]))
    }

    @Test func noCredentialsAnywhereIsAConfigErrorListingWhatWasLookedAt() throws {
        defer { dir.remove() }
        let home = dir.file("home").path
        do {
            _ = try resolve(nil, ["HOME": home, "NO_GCE_CHECK": "true"])
            Issue.record("resolved with nothing to find")
        } catch let failure as GoogleCredentialChain.Failure {
            #expect(failure.key == "credentials_file")
            for part in ["credentials_file is not set", "GOOGLE_APPLICATION_CREDENTIALS is not set",
                         "\(home)/.config/gcloud/application_default_credentials.json does not exist", "NO_GCE_CHECK=true",
                         "gcloud auth application-default login"] {
                #expect(failure.description.contains(part), "\(part): \(failure.description)")
            }
        }
        // Through the config loader: located at the destination, with the same list.
        do {
            _ = try SheetsFixtures.destination("spreadsheet_id: abc", base: dir.url, environment: ["HOME": home, "NO_GCE_CHECK": "true"])
            Issue.record("config accepted without credentials")
        } catch let error as ConfigError {
            #expect(error.keyPath == "destinations[0].credentials_file")
            #expect(error.message.contains("no Google credentials") && error.message.contains("NO_GCE_CHECK"), "\(error.message)")
        }
        // With the metadata server allowed, the config loads (whether it answers shows at the first token).
        let destination = try SheetsFixtures.destination("spreadsheet_id: abc", base: dir.url, environment: ["HOME": home, "GCE_METADATA_HOST": "127.0.0.1:9"])
        #expect(destination.credentialsDescription == "the GCE metadata server at http://127.0.0.1:9 (the instance's default service account)")
    }

    @Test func theFilesTypeDecidesTheFlow() throws {
        defer { dir.remove() }
        let sa = try GoogleCredentialsFile(json: Data(Self.serviceAccountJSON.utf8), source: "sa.json")
        #expect(sa.type == "service_account" && sa.quotaProject == nil)
        // A key file without "type" (as earlier syncgate versions accepted) is a service-account key.
        let untyped = Self.serviceAccountJSON.replacingOccurrences(of: "\"type\": \"service_account\", ", with: "")
        #expect(try GoogleCredentialsFile(json: Data(untyped.utf8), source: "old.json").type == "service_account")

        let refresh = "1//refresh-\(UUID().uuidString)"
        let secret = "client-secret-\(UUID().uuidString)"
        let user = try GoogleCredentialsFile(
            json: Data(authorizedUserJSON(refresh: refresh, secret: secret, extra: #", "quota_project_id": "billing-1""#).utf8), source: "adc.json")
        guard case .authorizedUser(let credentials) = user else {
            Issue.record("not authorized_user: \(user.type)")
            return
        }
        #expect(credentials.tokenURI == "https://oauth2.googleapis.com/token")  // gcloud's file names none
        #expect(credentials.clientID == "1234.apps.googleusercontent.com")
        #expect(user.quotaProject == "billing-1")
        // The refresh token and the client secret are registered secrets.
        #expect(Redactor.shared.redact("r=\(refresh) s=\(secret)") == "r=<redacted> s=<redacted>")
        let form = credentials.refreshForm(scope: OAuthTokenProvider.scope)
        #expect(form.hasPrefix("grant_type=refresh_token&client_id=1234.apps.googleusercontent.com&client_secret="))
        #expect(form.contains("&refresh_token=1%2F%2Frefresh-") && form.hasSuffix("&scope=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fspreadsheets"))

        func refusal(_ json: String) -> String {
            do {
                _ = try GoogleCredentialsFile(json: Data(json.utf8), source: "creds.json")
                Issue.record("accepted: \(json)")
                return ""
            } catch let error as DestinationError {
                #expect(error.classification == Classification(.permanent, scope: .destination))
                return error.message
            } catch {
                Issue.record("\(error)")
                return ""
            }
        }
        for type in ["external_account", "external_account_authorized_user"] {
            let message = refusal(#"{"type": "\#(type)", "audience": "//iam.googleapis.com/x"}"#)
            #expect(message == "creds.json holds '\(type)' credentials, which syncgate does not support yet: use a service-account key (type service_account) or gcloud's application-default login (type authorized_user, or impersonated_service_account with --impersonate-service-account)")
        }
        // An impersonation is read (SheetsImpersonationTests): one without its URL says so.
        #expect(refusal(#"{"type": "impersonated_service_account"}"#) == "creds.json has no service_account_impersonation_url")
        #expect(refusal(#"{"type": "api_key"}"#).contains("unknown credentials type 'api_key'"))
        #expect(refusal(#"{"client_id": "x"}"#).contains("has no \"type\""))
        #expect(refusal("[1]").contains("not a JSON object"))
        #expect(refusal("{").contains("is not JSON"))
        let lost = "client-secret-\(UUID().uuidString)"
        let noRefresh = refusal(#"{"type": "authorized_user", "client_id": "a", "client_secret": "\#(lost)"}"#)
        #expect(noRefresh.contains("has no refresh_token") && !noRefresh.contains(lost))
        #expect(refusal(authorizedUserJSON(extra: #", "token_uri": "file:///etc/passwd""#)).contains("token_uri that is not an http(s) URL"))
        // Before this chain an authorized_user file was refused as "has no private_key".
        #expect(!refusal(#"{"type": "authorized_user"}"#).contains("private_key"))
    }

    @Test func aFileTheEnvironmentNamesIsReadAtUseAndNamedInItsError() throws {
        defer { dir.remove() }
        let missing = dir.file("nowhere.json").path
        let source = try resolve(nil, ["GOOGLE_APPLICATION_CREDENTIALS": missing])
        do {
            _ = try OAuthTokenProvider.credentials(of: source)
            Issue.record("a missing file was read")
        } catch let error as DestinationError {
            #expect(error.message.contains("cannot read the credentials file \(missing)"), "\(error.message)")
            #expect(error.message.hasSuffix("(named by GOOGLE_APPLICATION_CREDENTIALS)"))
            #expect(error.classification == Classification(.permanent, scope: .destination))
        }
        try dir.write("folder/x", "")
        #expect(throws: DestinationError.self) { try OAuthTokenProvider.credentials(of: .file(path: dir.file("folder").path, origin: .gcloud)) }
    }

    @Test func validateSaysWhereTheCredentialsComeFromNeverWhatTheyAre() throws {
        defer { dir.remove() }
        let refresh = "1//refresh-\(UUID().uuidString)"
        let adc = try dir.write("gcloud/application_default_credentials.json", authorizedUserJSON(refresh: refresh))
        let env = ["HOME": dir.path, "CLOUDSDK_CONFIG": dir.file("gcloud").path]
        let config = try SheetsFixtures.validated("spreadsheet_id: abc", base: dir.url, environment: env)
        #expect(config.details == [
            "credentials: authorized_user from \(adc.path) (gcloud application-default login)",
            "token cache: \(dir.file("google-tokens").path) (files of mode 0600)",
        ])
        #expect(!config.details.joined().contains(refresh))
        let viaEnvironment = try SheetsFixtures.validated(
            "spreadsheet_id: abc", base: dir.url, environment: env.merging(["GOOGLE_APPLICATION_CREDENTIALS": adc.path]) { $1 })
        #expect(viaEnvironment.details.first == "credentials: authorized_user from \(adc.path) (GOOGLE_APPLICATION_CREDENTIALS)")
        let metadata = try SheetsFixtures.validated("spreadsheet_id: abc", base: dir.url, environment: ["HOME": dir.path, "GCE_METADATA_HOST": "127.0.0.1:9"])
        #expect(metadata.details.first == "credentials: the GCE metadata server at http://127.0.0.1:9 (the instance's default service account)")
        // An unsupported type is a located validate error.
        let federated = try dir.write("federated.json", #"{"type": "external_account"}"#)
        do {
            _ = try SheetsFixtures.validated("spreadsheet_id: abc", base: dir.url, environment: ["GOOGLE_APPLICATION_CREDENTIALS": federated.path])
            Issue.record("validate accepted external_account credentials")
        } catch let error as ConfigError {
            #expect(error.message.contains("'external_account' credentials, which syncgate does not support yet"), "\(error.message)")
        }
        // The Apps Script mode has no Google credentials and says nothing of them.
        #expect(try SheetsFixtures.validated("apps_script_url: https://x/y", base: dir.url, environment: [:]).details.isEmpty)
    }

    @Test func fingerprintFollowsTheSource() throws {
        defer { dir.remove() }
        let adc = try dir.write("adc.json", authorizedUserJSON())
        let viaEnvironment = try SheetsFixtures.destination(
            "spreadsheet_id: abc", base: dir.url, environment: ["GOOGLE_APPLICATION_CREDENTIALS": adc.path])
        let first = viaEnvironment.settingsFingerprint
        #expect(first == GoogleCredentialSource.hex(SHA256.hash(data: try Data(contentsOf: adc))))
        try dir.write("adc.json", authorizedUserJSON())  // a new login
        #expect(viaEnvironment.settingsFingerprint != first)
        let metadata = try SheetsFixtures.destination("spreadsheet_id: abc", base: dir.url, environment: ["HOME": dir.path, "NO_GCE_CHECK": "false", "GCE_METADATA_HOST": "127.0.0.1:9"])
        let other = try SheetsFixtures.destination("spreadsheet_id: abc", base: dir.url, environment: ["HOME": dir.path, "GCE_METADATA_HOST": "127.0.0.1:10"])
        #expect(metadata.settingsFingerprint.count == 64 && metadata.settingsFingerprint != other.settingsFingerprint)
    }
}
