import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing
@testable import SyncgateS3

/// Issue 14: every S3 failure has a class and a scope, tried against real servers on loopback: moto with signature
/// checking on (directly or through the fault proxy), nothing listening, a name that does not resolve, and a TLS
/// server whose certificate does not verify.
@Suite("S3 errors by class and scope", .enabled(if: S3TestGate.motoEnabled, S3TestGate.motoComment))
struct S3ClassificationTests {
    static func destination(
        endpoint: String, bucket: String, accessKey: String = "AKIAEXAMPLE000000000", secret: String = "not-the-secret",
        requestTimeout: Duration = .seconds(20)
    ) -> S3Destination {
        S3Destination(settings: S3Settings(
            endpoint: URL(string: endpoint)!, region: "us-east-1", bucket: bucket, pathStyle: true,
            credentials: SigV4Credentials(accessKeyID: accessKey, secretAccessKey: secret), requestTimeout: requestTimeout))
    }

    static func destination(_ server: S3TestServer, bucket: String, secret: String? = nil, port: Int? = nil) -> S3Destination {
        destination(
            endpoint: "http://127.0.0.1:\(port ?? server.port)", bucket: bucket, accessKey: server.accessKeyID,
            secret: secret ?? server.secretAccessKey)
    }

    /// The error an upload of a small file throws (it must throw).
    static func uploadError(_ destination: S3Destination, _ files: TemporaryDirectory, _ name: String = "f.txt") async throws -> DestinationError {
        if !files.exists(name) { try files.write(name, "content of \(name)") }
        let item = try S3TestFiles.item(files, name)
        do {
            _ = try await destination.upload(item, progress: { _ in })
        } catch let error as DestinationError {
            return error
        }
        throw S3TestServerError("the upload of \(name) succeeded")
    }

    @Test func wrongSecretOrUnknownKeyBlocksTheDestination() async throws {
        let server = try await S3TestServer(buckets: ["blocked"])
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-blocked")
        defer { files.remove() }
        let wrongSecret = "Wrong/Secret+Key0000000000000000000000000"
        let destination = Self.destination(server, bucket: "blocked", secret: wrongSecret)
        let error = try await Self.uploadError(destination, files)
        #expect(error.code == "SignatureDoesNotMatch")
        #expect(destination.classify(error) == Classification(.permanent, scope: .destination))
        #expect(!error.message.contains(wrongSecret))
        // The probe says the same.
        do {
            try await destination.probe()
            Issue.record("the probe with a wrong secret succeeded")
        } catch let probed as DestinationError {
            #expect(probed.code == "SignatureDoesNotMatch")
            #expect(probed.classification == Classification(.permanent, scope: .destination))
        }
        await destination.finish()

        let unknown = Self.destination(endpoint: server.endpoint, bucket: "blocked", accessKey: "AKIANOSUCHKEY0000000")
        do {
            try await unknown.probe()
            Issue.record("the probe with an unknown key succeeded")
        } catch let error as DestinationError {
            #expect(error.code == "InvalidAccessKeyId")
            #expect(unknown.classify(error) == Classification(.permanent, scope: .destination))
        }
        await unknown.finish()
    }

    @Test func probeAnswersForAGoodBucketAMissingOneAndAWriteOnlyKey() async throws {
        let server = try await S3TestServer(buckets: ["present"], writeOnlyUser: true)
        defer { server.stop() }
        let good = Self.destination(server, bucket: "present")
        try await good.probe()
        #expect(server.requests("GET").contains { $0.contains("/present?") && $0.contains("max-keys=1") && $0.contains("\" 200") })
        await good.finish()

        let missing = Self.destination(server, bucket: "absent")
        do {
            try await missing.probe()
            Issue.record("the probe of a missing bucket succeeded")
        } catch let error as DestinationError {
            #expect(error.code == "NoSuchBucket")
            #expect(error.classification == Classification(.permanent, scope: .destination))
            #expect(error.message.contains("probe: ListObjectsV2 s3://absent"))
        }
        await missing.finish()

        // A key that may write and not list: the probe's AccessDenied is inconclusive, and the upload goes through.
        let writer = Self.destination(
            endpoint: server.endpoint, bucket: "present", accessKey: try #require(server.writeOnlyAccessKeyID),
            secret: try #require(server.writeOnlySecretAccessKey))
        try await writer.probe()
        #expect(server.requests("GET").contains { $0.contains("/present?") && $0.contains("\" 403") }, "the listing was refused")
        let files = try TemporaryDirectory("s3-writer")
        defer { files.remove() }
        try files.write("w.txt", "written by a write-only key")
        _ = try await writer.upload(try S3TestFiles.item(files, "w.txt"), progress: { _ in })
        await writer.finish()
        let readBack = try TemporaryDirectory("s3-writer-readback")
        defer { readBack.remove() }
        #expect(try await server.objects(bucket: "present", into: readBack.url)["w.txt"]?.data == Data("written by a write-only key".utf8))
    }

    @Test func nothingListeningOrAnUnknownHostMakesTheDestinationUnavailable() async throws {
        let files = try TemporaryDirectory("s3-unreachable")
        defer { files.remove() }
        let refused = Self.destination(endpoint: "http://127.0.0.1:\(Loopback.freePort())", bucket: "b")
        let error = try await Self.uploadError(refused, files)
        #expect(error.classification == Classification(.retryable(), scope: .destination), "\(error)")
        #expect(error.code == "connection")
        #expect(error.message.contains("connection refused"), "\(error)")
        await #expect(throws: DestinationError.self) { try await refused.probe() }
        await refused.finish()

        let unknownHost = Self.destination(endpoint: "http://syncgate-test-host.invalid:9000", bucket: "b")
        let dns = try await Self.uploadError(unknownHost, files)
        #expect(dns.classification == Classification(.retryable(), scope: .destination), "\(dns)")
        #expect(dns.code == "connection")
        #expect(dns.message.contains("syncgate-test-host.invalid"), "\(dns)")
        await unknownHost.finish()
    }

    @Test func certificateThatDoesNotVerifyMakesTheDestinationUnavailable() async throws {
        let server = try await S3HostileServer(.tls, maxSeconds: 120)
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-tls")
        defer { files.remove() }
        let destination = Self.destination(endpoint: server.endpoint, bucket: "b")
        let error = try await Self.uploadError(destination, files)
        #expect(error.classification == Classification(.retryable(), scope: .destination), "not permanent: \(error)")
        #expect(error.code == "tls")
        #expect(error.message.contains("TLS handshake failed"), "\(error)")
        await destination.finish()
    }

    @Test func slowDownAnd429ThrottleWithTheirRetryAfter() async throws {
        let server = try await S3TestServer(buckets: ["throttle"])
        defer { server.stop() }
        let proxy = try await FaultProxy.start(targetPort: server.port)
        defer { proxy.stop() }
        let files = try TemporaryDirectory("s3-throttle")
        defer { files.remove() }
        let destination = Self.destination(server, bucket: "throttle", port: proxy.port)
        try proxy.set([
            "mode": "http_error", "status": 503, "retry_after": 4, "count": 1, "content_type": "application/xml",
            "body": "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>",
        ])
        let slowDown = try await Self.uploadError(destination, files)
        #expect(slowDown.code == "SlowDown")
        #expect(slowDown.classification == Classification(.deferred(after: .seconds(4)), scope: .destination))
        try proxy.set(["mode": "http_error", "status": 429, "retry_after": 2, "count": 1, "body": "Too Many Requests"])
        let tooMany = try await Self.uploadError(destination, files)
        #expect(tooMany.code == "http-429")
        #expect(tooMany.classification == Classification(.deferred(after: .seconds(2)), scope: .destination))
        // Once the server is itself again, the upload goes through.
        try proxy.pass()
        _ = try await destination.upload(try S3TestFiles.item(files, "f.txt"), progress: { _ in })
        await destination.finish()
    }

    @Test func internalErrorIsRetryableForTheFile() async throws {
        let server = try await S3TestServer(buckets: ["five"])
        defer { server.stop() }
        let proxy = try await FaultProxy.start(targetPort: server.port)
        defer { proxy.stop() }
        let files = try TemporaryDirectory("s3-500")
        defer { files.remove() }
        let destination = Self.destination(server, bucket: "five", port: proxy.port)
        try proxy.set([
            "mode": "http_error", "status": 500, "count": 1, "content_type": "application/xml",
            "body": "<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>",
        ])
        let error = try await Self.uploadError(destination, files)
        #expect(error.code == "InternalError")
        #expect(error.classification == Classification(.retryable()))
        try proxy.set(["mode": "http_error", "status": 502, "count": 1, "body": "<html>Bad Gateway</html>"])
        let gateway = try await Self.uploadError(destination, files)
        #expect(gateway.code == "http-502")
        #expect(gateway.classification == Classification(.retryable()))
        await destination.finish()
    }

    /// Answers moto never gives, over the wire from a server that gives nothing else: clock skew, an expired token,
    /// a wrong region on a HEAD (no body, only the header), SlowDown with an HTTP-date-free Retry-After.
    @Test(arguments: [
        (403, "RequestTimeTooSkewed", nil as String?, Classification(.retryable(), scope: .destination)),
        (400, "ExpiredToken", nil, Classification(.permanent, scope: .destination)),
        (400, "AuthorizationHeaderMalformed", "eu-central-1", Classification(.permanent, scope: .destination)),
        (503, "SlowDown", nil, Classification(.deferred(after: .seconds(9)), scope: .destination)),
        (403, "AccessDenied", nil, Classification(.permanent)),
    ])
    func answersOverTheWire(status: Int, code: String, region: String?, expected: Classification) async throws {
        let server = try await S3HostileServer(.status, status: status, code: code, retryAfter: code == "SlowDown" ? 9 : nil, bucketRegion: region)
        defer { server.stop() }
        let destination = Self.destination(endpoint: server.endpoint, bucket: "b")
        do {
            try await destination.probe()
            if code != "AccessDenied" { Issue.record("the probe went through \(code)") }
        } catch let error as DestinationError {
            #expect(error.code == code)
            #expect(destination.classify(error) == expected, "\(error)")
        }
        // A HEAD answer has no body: the status (and the region header) decide.
        let files = try TemporaryDirectory("s3-status")
        defer { files.remove() }
        try files.write("f.txt", "x")
        var item = try S3TestFiles.item(files, "f.txt")
        item.outcomeUnknown = true
        if let region {
            do {
                _ = try await destination.existingCopy(of: item)
                Issue.record("a HEAD signed for the wrong region was taken as an answer")
            } catch let error as DestinationError {
                #expect(error.classification == Classification(.permanent, scope: .destination), "\(error)")
                #expect(error.message.contains("the bucket is in region \(region)"), "\(error)")
            }
        }
        await destination.finish()
    }

    @Test func settingsFingerprintFollowsCredentialsAndEndpointWithoutShowingThem() {
        func fingerprint(_ id: String, _ secret: String, token: String? = nil, endpoint: String = "http://127.0.0.1:9000", region: String = "us-east-1") -> String {
            S3Destination(settings: S3Settings(
                endpoint: URL(string: endpoint)!, region: region, bucket: "b",
                credentials: SigV4Credentials(accessKeyID: id, secretAccessKey: secret, sessionToken: token))).settingsFingerprint
        }
        let base = fingerprint("AKIAONE", "secret-one")
        #expect(base.count == 64 && base.allSatisfy(\.isHexDigit))
        #expect(base == fingerprint("AKIAONE", "secret-one"), "stable")
        let others = [
            fingerprint("AKIATWO", "secret-one"), fingerprint("AKIAONE", "secret-two"), fingerprint("AKIAONE", "secret-one", token: "t"),
            fingerprint("AKIAONE", "secret-one", endpoint: "http://127.0.0.1:9001"), fingerprint("AKIAONE", "secret-one", region: "eu-west-1"),
            // Parts cannot run into each other.
            fingerprint("AKIAONEs", "ecret-one"),
        ]
        #expect(Set(others + [base]).count == others.count + 1)
        #expect(!base.contains("secret-one") && !base.contains("AKIAONE"))
    }
}
