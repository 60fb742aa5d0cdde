import Foundation
@testable import SyncgateS3
import SyncgateTestSupport
import Testing

/// The credential chain against real servers: moto's STS (web identity, a profile that assumes a role), a
/// `credential_process`, and the instance-metadata and container endpoints of `CredentialsStandIn`, each driving the
/// real `syncgate` binary to a moto S3 server that checks every signature, so an upload proves the credentials the
/// chain found are the ones S3 accepted. No AWS keys are in the environment of these runs (and `HOME` is a fresh
/// folder), so nothing else could have signed.
@Suite("AWS credential sources against servers", .enabled(if: S3TestGate.motoEnabled, S3TestGate.motoComment))
struct AWSCredentialServerTests {
    /// A folder with `plugins.yaml` (an s3 destination without keys) and three files in `outbox/`.
    struct Workspace {
        let dir: TemporaryDirectory
        let server: S3TestServer
        let bucket: String

        init(server: S3TestServer, bucket: String, extra: String = "") throws {
            self.server = server
            self.bucket = bucket
            dir = try TemporaryDirectory("aws-creds")
            try S3BinaryConfig.write(in: dir, server: server, bucket: bucket, keys: false, destination: extra.isEmpty ? [] : [extra])
            for name in ["a.txt", "b/c.txt", "d.bin"] {
                try dir.write("outbox/" + name, "contents of \(name)\n")
            }
        }

        /// The test's environment without any AWS setting, and `HOME` here (no ~/.aws of the machine's).
        func environment(_ extra: [String: String]) -> [String: String] {
            var environment: [String: String] = ["HOME": dir.url.path, "AWS_EC2_METADATA_DISABLED": "true"]
            for name in ProcessInfo.processInfo.environment.keys where name.hasPrefix("AWS_") { environment[name] = "" }
            for (key, value) in extra { environment[key] = value }
            return environment
        }

        func run(_ arguments: [String], environment extra: [String: String]) async throws -> ProcessResult {
            try await ProcessRunner.run(
                TestPaths.executable("syncgate"), arguments + ["--config", dir.file("plugins.yaml").path],
                environment: environment(extra), currentDirectory: dir.url, timeout: 120)
        }

        /// Syncs and checks that the three files are in the bucket.
        func syncAndCheck(_ extra: [String: String], _ comment: Comment) async throws -> ProcessResult {
            let result = try await run(["sync"], environment: extra)
            #expect(result.status == 0, "\(comment): \(result.output)")
            let objects = try await server.objects(bucket: bucket, into: dir.file("readback"))
            #expect(Set(objects.keys) == ["a.txt", "b/c.txt", "d.bin"], comment)
            #expect(objects["b/c.txt"]?.data == Data("contents of b/c.txt\n".utf8), comment)
            return result
        }
    }

    @Test func webIdentityThroughSTS() async throws {
        let server = try await S3TestServer(buckets: ["webid"])
        defer { server.stop() }
        let work = try Workspace(server: server, bucket: "webid")
        defer { work.dir.remove() }
        let token = "eyJhbGciOiJSUzI1NiJ9.oidc-token-from-the-ci-system.signature"
        try work.dir.write("token.jwt", token + "\n")
        let environment = [
            "AWS_WEB_IDENTITY_TOKEN_FILE": work.dir.file("token.jwt").path, "AWS_ROLE_ARN": try #require(server.roleARN),
            "AWS_ROLE_SESSION_NAME": "ci-run-42", "AWS_ENDPOINT_URL_STS": server.endpoint,
        ]
        let validate = try await work.run(["validate"], environment: environment)
        #expect(validate.status == 0, "\(validate.output)")
        #expect(validate.stdout.contains("credentials: web identity: STS AssumeRoleWithWebIdentity for \(server.roleARN!)"), "\(validate.stdout)")
        #expect(!validate.output.contains(token))
        // AWS answers AssumeRoleWithWebIdentity unsigned; moto with checking on wants a signature even there, so its
        // first request (the STS call, which comes before any S3 request) is let through unsigned. Every S3 request
        // after it is checked against the role's temporary credentials.
        try server.allowUnsignedRequests(1)
        let result = try await work.syncAndCheck(environment, "web identity")
        #expect(!result.output.contains(token))
        #expect(server.log().contains("POST / HTTP"), "the STS request is in moto's log")
    }

    @Test func aProfileAssumesARoleWithItsSourceProfilesKeys() async throws {
        let server = try await S3TestServer(buckets: ["assume"])
        defer { server.stop() }
        let work = try Workspace(server: server, bucket: "assume", extra: "profile: deploy")
        defer { work.dir.remove() }
        // The source profile's user may only assume the role: an upload that goes through was signed with the role's
        // temporary credentials, not with these keys.
        let baseKey = try #require(server.assumerAccessKeyID), baseSecret = try #require(server.assumerSecretAccessKey)
        try work.dir.write("aws/credentials", """
            [base]
            aws_access_key_id = \(baseKey)
            aws_secret_access_key = \(baseSecret)
            """)
        try work.dir.write("aws/config", """
            [profile deploy]
            role_arn = \(try #require(server.roleARN))
            source_profile = base
            role_session_name = syncgate-deploy
            """)
        let environment = [
            "AWS_SHARED_CREDENTIALS_FILE": work.dir.file("aws/credentials").path, "AWS_CONFIG_FILE": work.dir.file("aws/config").path,
            "AWS_ENDPOINT_URL_STS": server.endpoint,
        ]
        let validate = try await work.run(["validate"], environment: environment)
        #expect(validate.stdout.contains("credentials: profile deploy: STS AssumeRole \(server.roleARN!), signed with profile base (its keys)"),
                "\(validate.output)")
        #expect(!validate.output.contains(baseSecret))
        let result = try await work.syncAndCheck(environment, "assume role")
        #expect(!result.output.contains(baseSecret))
        #expect(server.log().contains("POST / HTTP"), "the STS AssumeRole request is in moto's log")
    }

    @Test func aCredentialProcessSuppliesTheKeys() async throws {
        let server = try await S3TestServer(buckets: ["process"])
        defer { server.stop() }
        let work = try Workspace(server: server, bucket: "process")
        defer { work.dir.remove() }
        let script = work.dir.file("creds.sh")
        try work.dir.write("creds.sh", """
            #!/bin/sh
            echo "$1" >> "\(work.dir.file("calls").path)"
            printf '{"Version": 1, "AccessKeyId": "%s", "SecretAccessKey": "%s"}\\n' "\(server.accessKeyID)" "\(server.secretAccessKey)"
            """)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: script.path)
        try work.dir.write("aws/config", """
            [default]
            credential_process = "\(script.path)" first-arg
            """)
        let environment = ["AWS_CONFIG_FILE": work.dir.file("aws/config").path]
        let validate = try await work.run(["validate"], environment: environment)
        #expect(validate.stdout.contains("credentials: profile default: its credential_process"), "\(validate.output)")
        let result = try await work.syncAndCheck(environment, "credential_process")
        #expect(!result.output.contains(server.secretAccessKey))
        // Keys without an expiry are asked for once per run, not once per file.
        let calls = (try? String(contentsOf: work.dir.file("calls"), encoding: .utf8)) ?? ""
        #expect(calls.split(separator: "\n") == ["first-arg"], "one call per run: \(calls)")
    }

    @Test func instanceMetadataWithIMDSv2Tokens() async throws {
        let server = try await S3TestServer(buckets: ["imds"])
        defer { server.stop() }
        let metadata = try await CredentialsStandIn.start()
        defer { metadata.stop() }
        try metadata.serve(try await server.assumeRole())
        let work = try Workspace(server: server, bucket: "imds")
        defer { work.dir.remove() }
        let environment = ["AWS_EC2_METADATA_DISABLED": "", "AWS_EC2_METADATA_SERVICE_ENDPOINT": metadata.endpoint]
        let validate = try await work.run(["validate"], environment: environment)
        #expect(validate.stdout.contains("credentials: EC2 instance metadata (IMDSv2) at \(metadata.endpoint)"), "\(validate.output)")
        _ = try await work.syncAndCheck(environment, "instance metadata")
        let counts = try metadata.counts()
        // One token, one listing of the role, one read of its credentials (they last an hour: no renewal in a run),
        // and no request without a token.
        #expect(counts["token"] == 1 && counts["list"] == 1 && counts["credentials"] == 1 && counts["refused"] == 0, "\(counts)")
    }

    @Test func containerCredentialsWithAnAuthorizationToken() async throws {
        let server = try await S3TestServer(buckets: ["container"])
        defer { server.stop() }
        let endpoint = try await CredentialsStandIn.start()
        defer { endpoint.stop() }
        let authorization = "container-authorization-9f8e7d6c5b4a"
        try endpoint.serve(try await server.assumeRole(), containerToken: authorization)
        let work = try Workspace(server: server, bucket: "container")
        defer { work.dir.remove() }
        let url = "http://127.0.0.1:\(endpoint.port)/v2/credentials/syncgate"
        let environment = ["AWS_CONTAINER_CREDENTIALS_FULL_URI": url, "AWS_CONTAINER_AUTHORIZATION_TOKEN": authorization]
        let result = try await work.syncAndCheck(environment, "container credentials")
        #expect(!result.output.contains(authorization))
        let counts = try endpoint.counts()
        #expect(counts["container"] == 1 && counts["refused"] == 0, "\(counts)")

        // A wrong token is refused by the endpoint: the destination is blocked (it waits for new settings), the
        // files stay pending, and the token is not shown.
        try work.dir.write("outbox/e.txt", "one more\n")
        let refused = try await work.run(["sync", "--json"], environment: ["AWS_CONTAINER_CREDENTIALS_FULL_URI": url,
                                                                          "AWS_CONTAINER_AUTHORIZATION_TOKEN": "wrong-token-0000"])
        #expect(refused.status != 0)
        #expect(refused.output.contains("blocked"), "\(refused.output)")
        #expect(!refused.output.contains("wrong-token-0000"))
    }

    /// Fetched credentials are kept until five minutes before they expire, then fetched again; a failed renewal
    /// goes on with the old ones while they are valid. (Time is passed in; the requests are real.)
    @Test func fetchedCredentialsAreRenewedFiveMinutesBeforeTheyExpire() async throws {
        let metadata = try await CredentialsStandIn.start()
        defer { metadata.stop() }
        let expiry = Date().addingTimeInterval(3600)
        let stamp = ISO8601DateFormatter().string(from: expiry)
        try metadata.serve(["AccessKeyId": "ASIAFIRST000000000001", "SecretAccessKey": "first-secret", "Token": "first-token", "Expiration": stamp])
        let provider = AWSCredentialProvider(source: .instanceMetadata(endpoint: metadata.endpoint), region: "us-east-1")
        let start = Date()
        let first = try await provider.current(now: start)
        #expect(first.accessKeyID.reveal() == "ASIAFIRST000000000001")
        _ = try await provider.current(now: start.addingTimeInterval(1800))
        #expect(try metadata.counts()["credentials"] == 1, "half an hour later the cached credentials serve")

        try metadata.serve(["AccessKeyId": "ASIASECOND00000000002", "SecretAccessKey": "second-secret", "Token": "second-token",
                            "Expiration": ISO8601DateFormatter().string(from: expiry.addingTimeInterval(3600))])
        let renewed = try await provider.current(now: expiry.addingTimeInterval(-240))
        #expect(renewed.accessKeyID.reveal() == "ASIASECOND00000000002", "four minutes before expiry they are renewed")
        #expect(try metadata.counts()["credentials"] == 2)

        // The endpoint fails from now on: the second credentials serve until they expire, then the error shows.
        try metadata.serve([:], failing: true)
        let kept = try await provider.current(now: expiry.addingTimeInterval(3600 - 120))
        #expect(kept.accessKeyID.reveal() == "ASIASECOND00000000002", "a failed renewal keeps credentials that are still valid")
        await #expect(throws: (any Error).self) { _ = try await provider.current(now: expiry.addingTimeInterval(3600 + 10)) }
    }

    /// `status` reads the ledger only: it needs no credentials, and finds none without complaint.
    @Test func statusNeedsNoCredentials() async throws {
        let server = try await S3TestServer(buckets: ["status"])
        defer { server.stop() }
        let work = try Workspace(server: server, bucket: "status")
        defer { work.dir.remove() }
        let sync = try await work.run(["sync"], environment: [:])
        #expect(sync.status == 78, "sync without credentials is a config error: \(sync.output)")
        #expect(sync.stderr.contains("credentials"), "\(sync.stderr)")
        let status = try await work.run(["status"], environment: [:])
        #expect(status.status == 0, "\(status.output)")
        #expect(status.stdout.contains("bucket"), "\(status.stdout)")
    }

    /// The real binary with a `credential_process` that writes 3 GiB: the sync ends at once (no 1.6 GiB resident,
    /// no wait), the destination blocked with an error naming the bound, and the process is gone.
    @Test func aCredentialProcessWritingGigabytesIsKilledAndTheSyncEnds() async throws {
        let server = try await S3TestServer(buckets: ["flood"])
        defer { server.stop() }
        let work = try Workspace(server: server, bucket: "flood")
        defer { work.dir.remove() }
        let script = work.dir.file("flood.sh")
        try work.dir.write("flood.sh", """
            #!/bin/sh
            echo $$ > "\(work.dir.file("flood.pid").path)"
            exec head -c 3221225472 /dev/zero
            """)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: script.path)
        try work.dir.write("aws/config", """
            [default]
            credential_process = "\(script.path)"
            """)
        let result = try await work.run(["sync"], environment: ["AWS_CONFIG_FILE": work.dir.file("aws/config").path])
        #expect(result.status != 0)
        #expect(result.output.contains("credential_process wrote more than 1 MiB; killed it"), "\(result.output.suffix(1500))")
        let pid = try #require(pid_t(try String(contentsOf: work.dir.file("flood.pid"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(await AWSCredentialChainTests.processEnds(pid), "the process is gone")
        #expect(try await server.objects(bucket: "flood", into: work.dir.file("readback")).isEmpty)
    }

    /// A 302 from instance metadata (after the IMDSv2 token was taken) or from the container endpoint is refused:
    /// the destination is blocked with an error saying so, the other host never gets the token nor hands out its
    /// keys (which S3 would accept), and nothing is uploaded.
    @Test func aRedirectFromInstanceMetadataOrTheContainerEndpointIsRefused() async throws {
        let server = try await S3TestServer(buckets: ["redirect"])
        defer { server.stop() }
        let other = try await CredentialsStandIn.start()
        defer { other.stop() }
        try other.serve(try await server.assumeRole())
        let endpoint = try await CredentialsStandIn.start()
        defer { endpoint.stop() }
        try endpoint.serve(["AccessKeyId": "ASIAUNUSED", "SecretAccessKey": "unused-secret"], redirect: other.endpoint)
        let work = try Workspace(server: server, bucket: "redirect")
        defer { work.dir.remove() }
        let cases = [
            ("instance metadata", ["AWS_EC2_METADATA_DISABLED": "", "AWS_EC2_METADATA_SERVICE_ENDPOINT": endpoint.endpoint]),
            ("container endpoint", ["AWS_CONTAINER_CREDENTIALS_FULL_URI": endpoint.endpoint + "/v2/credentials/syncgate"]),
        ]
        for (name, environment) in cases {
            let result = try await work.run(["sync", "--json"], environment: environment)
            #expect(result.status != 0, "\(name): \(result.output)")
            #expect(result.output.contains("CredentialsRedirect") && result.output.contains("never followed"), "\(name): \(result.output)")
        }
        #expect(try await server.objects(bucket: "redirect", into: work.dir.file("readback")).isEmpty)
        #expect(try endpoint.counts()["redirected"] == 2)
        let reached = try other.counts()
        #expect(reached["token"] == 0 && reached["list"] == 0 && reached["credentials"] == 0 && reached["container"] == 0
                    && reached["refused"] == 0, "the other host got nothing: \(reached)")
    }

    /// An STS that echoes the web identity token in its error's `<Code>` and `<Message>`: the token is in no
    /// output, not in `status --json` (whose `error_code` shows it redacted), and not in the state file's bytes
    /// (the database, its WAL and shared memory), which are the owner's alone (0600, in a 0700 folder).
    @Test func aWebIdentityTokenEchoedInAnSTSCodeIsInNoOutputNorTheStateFile() async throws {
        let server = try await S3TestServer(buckets: ["echo"])
        defer { server.stop() }
        let sts = try await CredentialsStandIn.start()
        defer { sts.stop() }
        let work = try Workspace(server: server, bucket: "echo")
        defer { work.dir.remove() }
        let token = "eyJhbGciOiJSUzI1NiJ9.echoed-\(UUID().uuidString).sig"
        try work.dir.write("token.jwt", token + "\n")
        let environment = [
            "AWS_WEB_IDENTITY_TOKEN_FILE": work.dir.file("token.jwt").path, "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/echo",
            "AWS_ROLE_SESSION_NAME": "echo", "AWS_ENDPOINT_URL_STS": sts.endpoint,
        ]
        var outputs: [(String, String)] = []
        var statusJSON = ""
        for arguments in [["sync", "--json", "-vv"], ["sync", "-vv"], ["status"], ["status", "--json"], ["status", "--json", "--all"]] {
            let result = try await work.run(arguments, environment: environment)
            outputs.append((arguments.joined(separator: " "), result.output))
            if arguments == ["status", "--json"] { statusJSON = result.stdout }
        }
        #expect(try sts.counts()["sts"] ?? 0 >= 1, "STS was asked (and echoed the token)")
        let status = try #require((try? JSONSerialization.jsonObject(with: Data(statusJSON.utf8))) as? [String: Any], "\(statusJSON)")
        let destination = try #require((status["destinations"] as? [[String: Any]])?.first)
        #expect(destination["state"] as? String == "blocked", "\(destination)")
        #expect((destination["error_code"] as? String) == "InvalidIdentityToken.<redacted>", "\(destination)")
        let folder = work.dir.file(".syncgate").path
        for file in ["state.sqlite", "state.sqlite-wal", "state.sqlite-shm"] {
            let path = folder + "/" + file
            guard FileManager.default.fileExists(atPath: path) else { continue }
            outputs.append((file, String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)))
            var st = stat()
            #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o600, "\(file) is 0\(String(st.st_mode & 0o777, radix: 8))")
        }
        var st = stat()
        #expect(stat(folder, &st) == 0 && st.st_mode & 0o777 == 0o700, "the state folder is 0\(String(st.st_mode & 0o777, radix: 8))")
        #expect(outputs.count >= 6)
        for (name, text) in outputs {
            #expect(!text.contains(token) && !text.contains(String(token.prefix(30))), "\(name) holds the web identity token")
        }
    }

    /// An S3 that echoes the session token its requests were signed with (fetched from `credential_process`) in its
    /// error's `<Code>` and `<Message>` (S3HostileServer, mode echo-token), answering 403 (credentials refused: the
    /// destination is blocked and keeps the code) and 400 (the file fails and keeps the code): the token is in no
    /// output, `status --json` shows the code redacted, and the state file's bytes (database, WAL, shared memory)
    /// do not hold it.
    @Test(arguments: [403, 400])
    func aSessionTokenFromCredentialProcessEchoedInAnS3CodeIsInNoOutputNorTheStateFile(status: Int) async throws {
        let server = try await S3HostileServer(.echoToken, status: status, code: "InvalidToken")
        defer { server.stop() }
        let dir = try TemporaryDirectory("aws-echo")
        defer { dir.remove() }
        let token = "FwoGZXIvYXdzEBYaD" + UUID().uuidString.replacingOccurrences(of: "-", with: "") + "Kq2+AbC/dEf=="
        let script = dir.file("creds.sh")
        try dir.write("creds.sh", """
            #!/bin/sh
            printf '{"Version": 1, "AccessKeyId": "ASIAECHOTEST00000000", "SecretAccessKey": "echo-secret-\(UUID().uuidString)", \
            "SessionToken": "\(token)", "Expiration": "2099-01-01T00:00:00Z"}\\n'
            """)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: script.path)
        try dir.write("aws/config", "[default]\ncredential_process = \"\(script.path)\"\n")
        try dir.write("plugins.yaml", """
            version: 1
            state: .syncgate/state.sqlite
            sources: [{name: outbox, path: outbox}]
            destinations:
              - {name: bucket, type: s3, endpoint: "\(server.endpoint)", region: us-east-1, bucket: echo, retry: {file: 0, artwork: 0}}
            routes: [{match: ["**/*"], to: [bucket]}]
            """)
        try dir.write("outbox/a.txt", "echo me\n")
        var environment: [String: String] = [
            "HOME": dir.url.path, "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": dir.file("aws/config").path,
        ]
        for name in ProcessInfo.processInfo.environment.keys where name.hasPrefix("AWS_") && environment[name] == nil { environment[name] = "" }

        var outputs: [(String, String)] = []
        var statusJSON = ""
        for arguments in [["sync", "--json", "-vv"], ["sync", "-vv"], ["status"], ["status", "--json"], ["status", "--json", "--all"]] {
            let result = try await ProcessRunner.run(
                TestPaths.executable("syncgate"), arguments + ["--config", dir.file("plugins.yaml").path],
                environment: environment, currentDirectory: dir.url, timeout: 120)
            outputs.append((arguments.joined(separator: " "), result.output))
            if arguments == ["status", "--json", "--all"] { statusJSON = result.stdout }
        }
        #expect(server.log().contains("echoed a token of \(token.count) characters"), "the request carried the token: \(server.log().suffix(500))")
        // Every error code kept, anywhere in the report: the echoed one is there, redacted.
        func codes(_ value: Any) -> [String] {
            if let object = value as? [String: Any] {
                return ((object["error_code"] as? String).map { [$0] } ?? []) + object.values.flatMap(codes)
            }
            return (value as? [Any])?.flatMap(codes) ?? []
        }
        let report = try #require(try? JSONSerialization.jsonObject(with: Data(statusJSON.utf8)), "\(statusJSON.prefix(500))")
        #expect(codes(report).contains("InvalidToken.<redacted>"), "\(codes(report)) in \(statusJSON.prefix(1500))")
        let folder = dir.file(".syncgate").path
        for file in ["state.sqlite", "state.sqlite-wal", "state.sqlite-shm"] {
            let path = folder + "/" + file
            guard FileManager.default.fileExists(atPath: path) else { continue }
            outputs.append((file, String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)))
        }
        #expect(outputs.count >= 6)
        for (name, text) in outputs {
            #expect(!text.contains(token) && !text.contains(String(token.prefix(30))), "\(name) holds the session token")
        }
    }
}
