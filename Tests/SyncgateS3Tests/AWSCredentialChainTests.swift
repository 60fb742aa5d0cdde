import Foundation
import SyncgateCore
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

    @Test("a credential process inherits no descriptor of syncgate's but its standard streams")
    func aCredentialProcessInheritsNoDescriptor() async throws {
        let dir = try TemporaryDirectory("aws-process")
        defer { dir.remove() }
        // A descriptor without close-on-exec, as a library may leave one open.
        let leaked = open("/dev/null", O_RDONLY)
        try #require(leaked > 2)
        defer { close(leaked) }
        // The script's own descriptors above 2 (`ls` opens one to list the folder, the shell may hold one for
        // the script): it fails, naming them, when `leaked` is among them.
        try dir.write("fds.sh", """
            if ls /proc/$$/fd | grep -qx '\(leaked)'; then echo "inherited: $(ls /proc/$$/fd | tr '\\n' ' ')" >&2; exit 9; fi
            echo '{"Version": 1, "AccessKeyId": "ASIAFDS", "SecretAccessKey": "fds-secret"}'
            """)
        let fetched = try await AWSCredentialProcess.run("sh " + dir.file("fds.sh").path, profile: "p")
        #expect(fetched.credentials.accessKeyID.reveal() == "ASIAFDS")
    }

    /// Whether process `pid` no longer runs (gone, or a zombie nobody reaped yet), waiting up to `seconds`.
    static func processEnds(_ pid: pid_t, within seconds: Double = 10) async -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if kill(pid, 0) != 0 && errno == ESRCH { return true }
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            if let close = stat.lastIndex(of: ")"), stat[stat.index(close, offsetBy: 2)] == "Z" { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// A `credential_process` that writes without end (3 GiB asked) is killed past 1 MiB: the fetch fails at once,
    /// blocking, with a message saying so, and the process is gone.
    @Test func aCredentialProcessWritingWithoutEndIsKilledPastOneMiB() async throws {
        let started = Date()
        do {
            _ = try await AWSCredentialProcess.runBounded("head -c 3221225472 /dev/zero", profile: "flood", timeout: 600)
            Issue.record("3 GiB of output must be refused")
        } catch let failure as AWSCredentialProcess.ProcessFailure {
            #expect(failure.error.description.contains("wrote more than 1 MiB"), "\(failure.error)")
            #expect(failure.error.failureClass == .permanent && failure.error.scope == .destination, "blocks the destination")
            #expect(await Self.processEnds(failure.pid), "the process is gone")
        }
        // Far below the 600 s deadline: the output bound, not the deadline, ended it.
        #expect(Date().timeIntervalSince(started) < 300)
    }

    /// A `credential_process` (and its child) that ignores SIGTERM is killed at its deadline: SIGTERM, then SIGKILL
    /// of its process group after the grace.
    @Test func aCredentialProcessIgnoringSIGTERMIsKilledWithItsChildAtTheDeadline() async throws {
        let dir = try TemporaryDirectory("aws-process-hang")
        defer { dir.remove() }
        try dir.write("hang.sh", """
            trap '' TERM
            sleep 600 &
            echo $! > \(dir.file("child").path)
            wait
            wait
            """)
        let started = Date()
        var gaveUpAfter: TimeInterval = 0
        do {
            _ = try await AWSCredentialProcess.runBounded("sh " + dir.file("hang.sh").path, profile: "hang", timeout: 1, grace: 1)
            Issue.record("a process that does not end must fail")
        } catch let failure as AWSCredentialProcess.ProcessFailure {
            gaveUpAfter = Date().timeIntervalSince(started)
            #expect(failure.error.description.contains("did not end within 1 s; killed it"), "\(failure.error)")
            #expect(await Self.processEnds(failure.pid), "the shell is gone")
            let child = try #require(pid_t(try String(contentsOf: dir.file("child"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(await Self.processEnds(child), "its child that ignored SIGTERM too")
        }
        // The deadline is 1 s and the grace 1 s: it gave up well within a minute even on a loaded machine (the
        // waits above for the processes to be gone are not counted: under load they took a minute more).
        #expect(gaveUpAfter > 0 && gaveUpAfter < 60)
    }

    /// Credentials fetched from the container endpoint are registered with the redactor as they arrive: their
    /// session token and secret key are scrubbed from whatever text later echoes them (an S3 error's code included).
    @Test func fetchedSessionTokensAreRegisteredWithTheRedactor() async throws {
        let endpoint = try await CredentialsStandIn.start()
        defer { endpoint.stop() }
        let token = "FetchedSessionToken-\(UUID().uuidString)"
        let secret = "fetched-secret-\(UUID().uuidString)"
        try endpoint.serve(["AccessKeyId": "ASIAFETCHED", "SecretAccessKey": secret, "Token": token, "Expiration": "2099-01-01T00:00:00Z"])
        #expect(Redactor.shared.redact("code \(token)").contains(token), "not known before the fetch")
        let fetched = try await AWSCredentialFetcher.fetch(.container(url: endpoint.endpoint + "/v2/credentials/syncgate", token: nil, tokenFile: nil),
                                                           region: "eu-west-1")
        #expect(fetched.credentials.sessionToken?.reveal() == token)
        #expect(Redactor.shared.redactCode("InvalidToken." + token) == "InvalidToken.<redacted>")
        #expect(!Redactor.shared.redact("echo \(secret)").contains(secret))
    }

    /// A redirect from the container endpoint is refused, never followed.
    @Test func aRedirectFromTheContainerEndpointIsRefused() async throws {
        let endpoint = try await CredentialsStandIn.start()
        defer { endpoint.stop() }
        let other = try await CredentialsStandIn.start()
        defer { other.stop() }
        try other.serve(["AccessKeyId": "ASIAOTHER", "SecretAccessKey": "other-host-secret"])
        try endpoint.serve(["AccessKeyId": "ASIAUNUSED", "SecretAccessKey": "unused-secret"], redirect: other.endpoint)
        do {
            _ = try await AWSCredentialFetcher.fetch(.container(url: endpoint.endpoint + "/v2/credentials/syncgate", token: nil, tokenFile: nil),
                                                     region: "eu-west-1")
            Issue.record("a redirect must be refused")
        } catch let error as DestinationError {
            #expect(error.code == "CredentialsRedirect" && error.description.contains("302"), "\(error)")
        }
        #expect(try endpoint.counts()["redirected"] == 1)
        #expect(try other.counts()["container"] == 0, "nothing reached the other host")
    }
}
