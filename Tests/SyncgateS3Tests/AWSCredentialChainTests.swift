import Foundation
import SyncgateTestSupport
import Testing
@testable import SyncgateS3

/// Which source the chain picks from the config, the environment and the shared files, in the AWS SDKs' order, and
/// how the shared files are read. (Fetching from STS, a process, the container endpoint and instance metadata is
/// not covered here.)
@Suite("AWS credential chain")
struct AWSCredentialChainTests {
    static func resolve(_ environment: [String: String], keys: SigV4Credentials? = nil, profile: String? = nil) throws -> AWSCredentialSource {
        try AWSCredentialChain.resolve(keys: keys, profile: profile, region: "eu-west-1", environment: environment)
    }

    @Test func sharedFilesAreReadAsTheAWSCLIReadsThem() {
        let config = AWSSharedConfig.parse("""
            [default]
            region = eu-west-1
            [profile ci]
            role_arn = arn:aws:iam::123456789012:role/ci  # inline comment
            source_profile = base
            s3 =
              max_concurrent_requests = 20
            [sso-session corp]
            sso_start_url = https://example.awsapps.com/start
            ; a comment
            """, configFile: true)
        #expect(config["default"]?["region"] == "eu-west-1")
        #expect(config["ci"]?["role_arn"] == "arn:aws:iam::123456789012:role/ci")
        #expect(config["ci"]?["max_concurrent_requests"] == nil, "a nested setting is not the profile's")
        #expect(config["sso-session corp"] == nil && config["corp"] == nil)
        let credentials = AWSSharedConfig.parse("[base]\naws_access_key_id=AKIABASE\naws_secret_access_key = s#cret\n", configFile: false)
        #expect(credentials["base"]?["aws_secret_access_key"] == "s#cret", "a # without a space before it is part of the value")
    }

    @Test func theOrderIsConfigEnvironmentWebIdentityProfileContainerInstance() throws {
        let home = try TemporaryDirectory("aws-home")
        defer { home.remove() }
        try home.write(".aws/credentials", "[default]\naws_access_key_id = AKIAFILE\naws_secret_access_key = file-secret\n")
        let keys = SigV4Credentials(accessKeyID: "AKIACONFIG", secretAccessKey: "config-secret")
        var environment = ["HOME": home.url.path, "AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "env-secret",
                           "AWS_WEB_IDENTITY_TOKEN_FILE": "/run/token", "AWS_ROLE_ARN": "arn:aws:iam::1:role/web",
                           "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/x"]
        guard case .config = try Self.resolve(environment, keys: keys) else { Issue.record("config first"); return }
        guard case .environment(let env) = try Self.resolve(environment) else { Issue.record("environment second"); return }
        #expect(env.accessKeyID.reveal() == "AKIAENV")
        environment["AWS_ACCESS_KEY_ID"] = nil
        guard case .webIdentity(let role, let file, _, let origin) = try Self.resolve(environment) else { Issue.record("web identity third"); return }
        #expect(role == "arn:aws:iam::1:role/web" && file == "/run/token" && origin == "https://sts.eu-west-1.amazonaws.com")
        environment["AWS_WEB_IDENTITY_TOKEN_FILE"] = nil
        guard case .profileKeys(let profile, let fromFile) = try Self.resolve(environment) else { Issue.record("profile fourth"); return }
        #expect(profile == "default" && fromFile.accessKeyID.reveal() == "AKIAFILE")
        try FileManager.default.removeItem(at: home.file(".aws/credentials"))
        guard case .container(let url, _, _) = try Self.resolve(environment) else { Issue.record("container fifth"); return }
        #expect(url == "http://169.254.170.2/v2/credentials/x")
        environment["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"] = nil
        guard case .instanceMetadata(let endpoint) = try Self.resolve(environment) else { Issue.record("instance metadata last"); return }
        #expect(endpoint == "http://169.254.169.254")
        environment["AWS_EC2_METADATA_DISABLED"] = "true"
        #expect(throws: AWSCredentialChain.Failure.self) { try Self.resolve(environment) }
    }

    @Test func profilesAssumeRolesRunProcessesAndNameTheirMistakes() throws {
        let home = try TemporaryDirectory("aws-home")
        defer { home.remove() }
        try home.write(".aws/config", """
            [profile ci]
            role_arn = arn:aws:iam::123456789012:role/ci
            source_profile = base
            external_id = ext-1
            [profile vault]
            credential_process = /usr/local/bin/vault-aws --json
            [profile loop-a]
            role_arn = arn:aws:iam::1:role/a
            source_profile = loop-b
            [profile loop-b]
            role_arn = arn:aws:iam::1:role/b
            source_profile = loop-a
            [profile lonely]
            role_arn = arn:aws:iam::1:role/x
            """)
        try home.write(".aws/credentials", "[base]\naws_access_key_id = AKIABASE\naws_secret_access_key = base-secret\n")
        let environment = ["HOME": home.url.path, "AWS_ENDPOINT_URL_STS": "http://127.0.0.1:5000/"]
        guard case .assumeRole(let profile, let role, _, let external, let source, let origin) = try Self.resolve(environment, profile: "ci") else {
            Issue.record("assume role"); return
        }
        #expect(profile == "ci" && role == "arn:aws:iam::123456789012:role/ci" && external == "ext-1" && origin == "http://127.0.0.1:5000")
        guard case .profileKeys("base", _) = source else { Issue.record("signed with base's keys"); return }
        guard case .process("vault", let command) = try Self.resolve(environment.merging(["AWS_PROFILE": "vault"]) { $1 }) else {
            Issue.record("credential_process"); return
        }
        #expect(command == "/usr/local/bin/vault-aws --json")
        func failure(_ profile: String) -> String {
            do { return "no error: \(try Self.resolve(environment, profile: profile))" } catch { return String(describing: error) }
        }
        #expect(failure("loop-a").contains("goes round"))
        #expect(failure("lonely").contains("role_arn needs source_profile"))
        #expect(failure("missing").contains("profile 'missing' has no credentials"))
        // What validate prints names the source, never a secret.
        let described = try Self.resolve(environment, profile: "ci").description
        #expect(described.contains("AssumeRole arn:aws:iam::123456789012:role/ci") && !described.contains("base-secret"))
    }

    @Test func aCredentialProcessAnswerIsReadAndItsFailureBlocks() async throws {
        let dir = try TemporaryDirectory("aws-process")
        defer { dir.remove() }
        try dir.write("ok.sh", """
            echo '{"Version": 1, "AccessKeyId": "ASIAPROC", "SecretAccessKey": "proc-secret", "SessionToken": "tok", "Expiration": "2099-01-01T00:00:00Z"}'
            """)
        try dir.write("fail.sh", "echo 'vault is sealed' >&2; exit 3\n")
        let fetched = try await AWSCredentialProcess.run("sh " + dir.file("ok.sh").path, profile: "p")
        #expect(fetched.credentials.accessKeyID.reveal() == "ASIAPROC" && fetched.credentials.sessionToken?.reveal() == "tok")
        #expect(fetched.expiration == ISO8601DateFormatter().date(from: "2099-01-01T00:00:00Z"))
        do {
            _ = try await AWSCredentialProcess.run("sh " + dir.file("fail.sh").path, profile: "p")
            Issue.record("a failing process must throw")
        } catch {
            #expect(String(describing: error).contains("exited with status 3: vault is sealed"))
        }
    }
}
