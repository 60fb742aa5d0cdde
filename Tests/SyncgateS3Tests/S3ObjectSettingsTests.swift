import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing
@testable import SyncgateS3

/// What stored objects carry besides their bytes: the media type of their extension, cache control, server-side
/// encryption, tags and a canned ACL, from the config to the object as boto3 reads it back from moto.
@Suite("S3 object settings")
struct S3ObjectSettingsTests {
    static func settings(_ yaml: String) throws -> S3Settings {
        let text = """
            version: 1
            sources: [{name: outbox, path: /tmp}]
            destinations:
              - name: bucket
                type: s3
                endpoint: http://127.0.0.1:5000
                bucket: builds
                access_key_id: AKIAEXAMPLEKEY
                secret_access_key: example-secret
            \(yaml.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
            routes: [{match: ["**/*"], to: [bucket]}]
            """
        let config = try GatewayConfig.parse(
            text: text, file: "plugins.yaml", baseDirectory: URL(fileURLWithPath: "/tmp"),
            registry: PluginRegistry([S3Destination.registration]), environment: [:])
        return try #require(config.destination(named: "bucket")?.destination as? S3Destination).settings
    }

    static func failure(_ yaml: String) -> String {
        do {
            _ = try settings(yaml)
            return "no error"
        } catch {
            return String(describing: error)
        }
    }

    @Test func mediaTypesComeFromTheExtensionAndTheConfigWins() throws {
        let objects = try Self.settings("content_types: {.log: text/x-syncgate-log, bin: application/x-firmware}").objects
        #expect(objects.contentType(forKey: "art/cover.PNG") == "image/png")
        #expect(objects.contentType(forKey: "audio/theme.mp3") == "audio/mpeg")
        #expect(objects.contentType(forKey: "records/2026.ndjson") == "application/x-ndjson")
        #expect(objects.contentType(forKey: "reports/build.csv") == "text/csv; charset=utf-8")
        #expect(objects.contentType(forKey: "logs/today.log") == "text/x-syncgate-log")
        #expect(objects.contentType(forKey: "fw/update.bin") == "application/x-firmware")
        #expect(objects.contentType(forKey: "README") == "application/octet-stream")
        #expect(objects.contentType(forKey: "dir.d/.profile") == "application/octet-stream", "a dot file has no extension")
        #expect(objects.contentType(forKey: "a.tar.unknownext") == "application/octet-stream")
        // Nothing configured: only the media type is sent.
        #expect(S3ObjectSettings().headers(forKey: "a.png").map(\.name) == ["Content-Type"])
    }

    @Test func headersCarryEveryConfiguredSetting() throws {
        let objects = try Self.settings("""
            cache_control: max-age=3600, public
            sse: aws:kms
            sse_kms_key_id: arn:aws:kms:us-east-1:123456789012:key/abc
            tags: {team: car audio, "b&c": "x=y"}
            acl: bucket-owner-full-control
            """).objects
        let headers = Dictionary(uniqueKeysWithValues: objects.headers(forKey: "x.json").map { ($0.name, $0.value) })
        #expect(headers["Content-Type"] == "application/json")
        #expect(headers["Cache-Control"] == "max-age=3600, public")
        #expect(headers["x-amz-server-side-encryption"] == "aws:kms")
        #expect(headers["x-amz-server-side-encryption-aws-kms-key-id"] == "arn:aws:kms:us-east-1:123456789012:key/abc")
        #expect(headers["x-amz-tagging"] == "b%26c=x%3Dy&team=car%20audio", "sorted by key, each part encoded")
        #expect(headers["x-amz-acl"] == "bucket-owner-full-control")
    }

    @Test func mistakesNameTheirKey() {
        #expect(Self.failure("sse: aes").contains("sse") && Self.failure("sse: aes").contains("is not AES256 or aws:kms"))
        #expect(Self.failure("sse_kms_key_id: abc").contains("goes with sse: aws:kms"))
        #expect(Self.failure("acl: world").contains("is not a canned ACL"))
        #expect(Self.failure("content_types: {log: plain}").contains("is not a media type"))
        #expect(Self.failure("content_types: {\"a/b\": text/plain}").contains("is not a file extension"))
        let many = (1...11).map { "t\($0): v" }.joined(separator: ", ")
        #expect(Self.failure("tags: {\(many)}").contains("at most 10 tags"))
        #expect(Self.failure("cache_control: \"a\\nb\"").contains("one line"))
        #expect(Self.failure("tag: {a: b}").contains("unknown key 'tag'"))
    }

    @Test(.enabled(if: S3TestGate.motoEnabled, S3TestGate.motoComment))
    func storedObjectsCarryTheSettingsSmallAndMultipart() async throws {
        let server = try await S3TestServer(buckets: ["meta"])
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-meta")
        defer { files.remove() }
        try files.write("art/cover.png", S3TestFiles.bytes(2_000, seed: 1))
        try files.write("logs/today.log", "line one\n")
        try files.write("video/trailer.mp4", S3TestFiles.bytes(6 << 20, seed: 2))
        var objects = S3ObjectSettings()
        objects.contentTypes = ["log": "text/x-syncgate-log"]
        objects.cacheControl = "max-age=60"
        objects.sse = .aes256
        objects.tags = [(key: "env", value: "prod"), (key: "team", value: "car audio")]
        objects.acl = "public-read"
        let destination = S3Destination(settings: S3Settings(
            endpoint: URL(string: server.endpoint)!, region: "us-east-1", bucket: "meta", pathStyle: true,
            credentials: SigV4Credentials(accessKeyID: server.accessKeyID, secretAccessKey: server.secretAccessKey),
            multipart: S3MultipartConfig(threshold: 5 << 20, partSize: 5 << 20, concurrency: 2), objects: objects))
        defer { Task { await destination.finish() } }
        for path in ["art/cover.png", "logs/today.log", "video/trailer.mp4"] {
            _ = try await destination.upload(try S3TestFiles.item(files, path), progress: { _ in })
        }
        #expect(server.requests("PUT").filter { $0.contains("partNumber=") }.count == 2, "the video went as a multipart upload")

        let expected = ["art/cover.png": "image/png", "logs/today.log": "text/x-syncgate-log", "video/trailer.mp4": "video/mp4"]
        for (key, type) in expected {
            let object = try await server.describe(bucket: "meta", key: key)
            #expect(object.contentType == type, "\(key)")
            #expect(object.cacheControl == "max-age=60", "\(key)")
            #expect(object.serverSideEncryption == "AES256", "\(key)")
            #expect(object.tags == ["env": "prod", "team": "car audio"], "\(key)")
            #expect(object.grants.contains("http://acs.amazonaws.com/groups/global/AllUsers: READ"), "\(key): \(object.grants)")
        }
        // SSE-S3 keeps the ETag an MD5 of the bytes: the copy is still recognised.
        #expect(try await destination.existingCopy(of: try S3TestFiles.item(files, "art/cover.png")) != nil)
    }

    @Test(.enabled(if: S3TestGate.motoEnabled, S3TestGate.motoComment))
    func kmsEncryptionNamesItsKey() async throws {
        let server = try await S3TestServer(buckets: ["kms"])
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-kms")
        defer { files.remove() }
        try files.write("report.pdf", S3TestFiles.bytes(1_000, seed: 3))
        var objects = S3ObjectSettings()
        objects.sse = .kms
        objects.sseKMSKeyID = "arn:aws:kms:us-east-1:123456789012:key/syncgate-test"
        let destination = S3Destination(settings: S3Settings(
            endpoint: URL(string: server.endpoint)!, region: "us-east-1", bucket: "kms", pathStyle: true,
            credentials: SigV4Credentials(accessKeyID: server.accessKeyID, secretAccessKey: server.secretAccessKey), objects: objects))
        defer { Task { await destination.finish() } }
        _ = try await destination.upload(try S3TestFiles.item(files, "report.pdf"), progress: { _ in })
        let object = try await server.describe(bucket: "kms", key: "report.pdf")
        #expect(object.contentType == "application/pdf")
        #expect(object.serverSideEncryption == "aws:kms")
        #expect(object.kmsKeyID == "arn:aws:kms:us-east-1:123456789012:key/syncgate-test")
    }
}
