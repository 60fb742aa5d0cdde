import Foundation
import SyncgateTestSupport

/// The `plugins.yaml` the tests that drive the real binary against moto write: one source `outbox` (created) and
/// one s3 destination `bucket` on the test server, with `destination` lines added under it (indented four spaces,
/// as its keys) and, with `keys`, the server's access key read from `S3_TEST_KEY` and `S3_TEST_SECRET`.
enum S3BinaryConfig {
    static func write(in dir: TemporaryDirectory, server: S3TestServer, bucket: String, keys: Bool, destination lines: [String]) throws {
        var destination = [
            "endpoint: \(server.endpoint)", "region: us-east-1", "bucket: \(bucket)", "retry: { file: 0, artwork: 0 }",
        ]
        if keys { destination += ["access_key_id: ${S3_TEST_KEY}", "secret_access_key: ${S3_TEST_SECRET}"] }
        destination += lines
        try dir.write("plugins.yaml", """
            version: 1
            state: .syncgate/state.sqlite
            sources:
              - name: outbox
                path: outbox
            destinations:
              - name: bucket
                type: s3
            \(destination.map { "    " + $0 }.joined(separator: "\n"))
            routes:
              - match: ["**/*"]
                to: [bucket]
            """)
        try FileManager.default.createDirectory(at: dir.file("outbox"), withIntermediateDirectories: true)
    }

    /// The environment giving the binary the server's keys (for `keys: true`).
    static func keys(_ server: S3TestServer) -> [String: String] {
        ["S3_TEST_KEY": server.accessKeyID, "S3_TEST_SECRET": server.secretAccessKey]
    }
}
