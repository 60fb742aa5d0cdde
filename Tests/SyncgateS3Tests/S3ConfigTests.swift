import Foundation
import SyncgateCore
import Testing
@testable import SyncgateS3

@Suite("s3 destination config")
struct S3ConfigTests {
    func load(_ destination: String, environment: [String: String] = [:]) throws -> S3Destination {
        let text = """
            version: 1
            sources:
              - name: outbox
                path: /tmp
            destinations:
            \(destination)
            routes:
              - match: ["**/*"]
                to: [bucket]
            """
        let config = try GatewayConfig.parse(
            text: text, file: "plugins.yaml", baseDirectory: URL(fileURLWithPath: "/tmp"),
            registry: PluginRegistry([S3Destination.registration]), environment: environment)
        let destination = try #require(config.destination(named: "bucket")?.destination as? S3Destination)
        return destination
    }

    func failure(_ destination: String, environment: [String: String] = [:]) -> String {
        do {
            _ = try load(destination, environment: environment)
            return "no error"
        } catch {
            return String(describing: error)
        }
    }

    @Test func fullConfig() throws {
        let destination = try load("""
              - name: bucket
                type: s3
                endpoint: http://127.0.0.1:5000
                region: eu-west-1
                bucket: builds
                prefix: outbox/
                access_key_id: AKIAEXAMPLEKEY
                secret_access_key: ${MY_SECRET}
                session_token: tok-en-value
                multipart: { threshold: 32MiB, part_size: 6MiB, concurrency: 3 }
                storage_class: STANDARD_IA
            """, environment: ["MY_SECRET": "s3cr3t-value"])
        let s = destination.settings
        #expect(s.scheme == "http" && s.host == "127.0.0.1" && s.port == 5000)
        #expect(s.region == "eu-west-1" && s.bucket == "builds" && s.prefix == "outbox/")
        #expect(s.pathStyle)
        #expect(s.credentials?.secretAccessKey.reveal() == "s3cr3t-value")
        #expect(s.credentials?.sessionToken?.reveal() == "tok-en-value")
        #expect(s.multipart == S3MultipartConfig(threshold: 32 << 20, partSize: 6 << 20, concurrency: 3))
        #expect(s.storageClass == "STANDARD_IA")
        #expect(try destination.remoteName(forRelativePath: "a/b c.txt") == "outbox/a/b c.txt")
        #expect(s.path(key: "outbox/a/b c.txt") == "/builds/outbox/a/b%20c.txt")
        #expect(s.hostHeader == "127.0.0.1:5000")
        #expect(!"\(String(describing: s.credentials))".contains("s3cr3t-value"))
    }

    @Test func defaultsAndEnvironmentCredentials() throws {
        let destination = try load("""
              - name: bucket
                type: s3
                bucket: builds
            """, environment: ["AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "env-secret", "AWS_REGION": "eu-central-1"])
        let s = destination.settings
        #expect(s.host == "s3.eu-central-1.amazonaws.com" && s.scheme == "https")
        #expect(!s.pathStyle)
        #expect(s.hostHeader == "builds.s3.eu-central-1.amazonaws.com")
        #expect(s.path(key: "k") == "/k")
        #expect(s.credentials?.accessKeyID.reveal() == "AKIAENV")
        #expect(s.multipart == S3MultipartConfig(threshold: 16 << 20, partSize: 8 << 20, concurrency: 4))
        #expect(s.prefix == "")
    }

    @Test func rejectsBadValuesWithLocations() {
        let base = """
              - name: bucket
                type: s3
                endpoint: http://127.0.0.1:5000
                bucket: builds
                access_key_id: a
                secret_access_key: b
            """
        #expect(failure(base + "\n    multipart: { part_size: 1MiB }").contains("multipart.part_size: must be >= 5MiB"))
        #expect(failure(base + "\n    multipart: { concurrency: 0 }").contains("multipart.concurrency: must be between 1 and 64"))
        #expect(failure(base + "\n    prefix: /abs").contains("prefix: must not start with '/'"))
        #expect(failure(base + "\n    colour: red").contains("colour"))
        #expect(failure(base.replacingOccurrences(of: "http://127.0.0.1:5000", with: "ftp://x")).contains("endpoint"))
        let noCreds = """
              - name: bucket
                type: s3
                bucket: builds
            """
        #expect(failure(noCreds, environment: ["AWS_EC2_METADATA_DISABLED": "true"]).contains("no credentials"))
        let halfCreds = noCreds + "\n    access_key_id: abc"
        #expect(failure(halfCreds).contains("go together"))
        // Error messages carry the file and line.
        #expect(failure(base + "\n    multipart: { part_size: 1MiB }").hasPrefix("plugins.yaml:"))
    }

    @Test func multipartPartSizeGrowsForHugeFiles() {
        let config = S3MultipartConfig()
        #expect(config.effectivePartSize(for: 1 << 30) == 8 << 20)
        let huge: Int64 = 100 << 30
        #expect(config.effectivePartSize(for: huge) * 10_000 >= huge)
    }

    @Test func overlongKeysAreRejectedPermanently() throws {
        let destination = try load("""
              - name: bucket
                type: s3
                endpoint: http://127.0.0.1:5000
                bucket: builds
                access_key_id: a
                secret_access_key: b
            """)
        #expect(throws: DestinationError.self) { try destination.remoteName(forRelativePath: String(repeating: "x", count: 1025)) }
    }
}
