import Foundation
import SyncgateTestSupport
import Testing

/// A working folder for the proxy and TLS tests: `plugins.yaml` with one s3 destination (extra destination keys
/// allowed), `outbox/`, and an environment that starts with every proxy and CA variable of this machine emptied
/// (an empty variable counts as unset), so each test says exactly which it sets.
struct S3NetworkWorkspace {
    let dir: TemporaryDirectory
    var environment: [String: String]

    /// The host name the proxy tests give the S3 server: `.test` is reserved (RFC 6761), so it resolves nowhere but
    /// in the proxy's hosts_file.
    static let proxiedHost = "s3.syncgate.test"

    static let neutralEnvironment: [String: String] = [
        "HTTP_PROXY": "", "http_proxy": "", "HTTPS_PROXY": "", "https_proxy": "", "NO_PROXY": "", "no_proxy": "",
        "ALL_PROXY": "", "all_proxy": "", "AWS_CA_BUNDLE": "", "SSL_CERT_FILE": "",
    ]

    /// Without `keys`, the config names no credentials: they come from the environment's chain.
    init(endpoint: String, bucket: String, server: S3TestServer, destinationKeys: String = "", keys: Bool = true) throws {
        dir = try TemporaryDirectory("s3-net")
        environment = S3NetworkWorkspace.neutralEnvironment.merging(
            ["S3_TEST_KEY": server.accessKeyID, "S3_TEST_SECRET": server.secretAccessKey]) { $1 }
        var extraKeys = destinationKeys
        if keys { extraKeys = "access_key_id: ${S3_TEST_KEY}\nsecret_access_key: ${S3_TEST_SECRET}\n" + extraKeys }
        let extra = extraKeys.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n")
        try dir.write("plugins.yaml", """
            version: 1
            state: .syncgate/state.sqlite
            sources:
              - name: outbox
                path: outbox
            destinations:
              - name: bucket
                type: s3
                endpoint: \(endpoint)
                region: us-east-1
                bucket: \(bucket)
                request_timeout: 20s
                retry: { file: 1, base_delay: 10ms, max_delay: 50ms }
            \(extra)
            routes:
              - match: ["**/*"]
                to: [bucket]
            """)
        try FileManager.default.createDirectory(at: dir.file("outbox"), withIntermediateDirectories: true)
    }

    func remove() { dir.remove() }

    func run(_ arguments: [String], timeout: TimeInterval = 120) async throws -> ProcessResult {
        try await ProcessRunner.run(
            TestPaths.executable("syncgate"), arguments + ["--config", dir.file("plugins.yaml").path], environment: environment,
            currentDirectory: dir.url, timeout: timeout)
    }

    static func summary(_ result: ProcessResult) -> [String: Any]? {
        result.stdout.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
            .last { $0["event"] as? String == "summary" }
    }

    func status() async throws -> (json: [String: Any], text: String) {
        let result = try await run(["status", "--json"])
        return ((try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any] ?? [:], result.output)
    }

    /// Checks that the run left the destination away as a whole (`state`, `error_code`), every file pending with no
    /// attempt counted; returns the destination's `last_error`.
    @discardableResult
    func expectDestinationAway(
        state: String = "unavailable", code: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> String {
        let status = try await status().json
        let files = status["files"] as? [[String: Any]] ?? []
        #expect(!files.isEmpty, "status lists the files: \(status)", sourceLocation: sourceLocation)
        for file in files {
            #expect(file["status"] as? String == "pending", "\(file)", sourceLocation: sourceLocation)
            #expect(file["attempts"] as? Int == 0, "no attempt counted: \(file)", sourceLocation: sourceLocation)
        }
        let destination = (status["destinations"] as? [[String: Any]])?.first ?? [:]
        #expect(destination["state"] as? String == state, "\(destination)", sourceLocation: sourceLocation)
        #expect(destination["error_code"] as? String == code, "\(destination)", sourceLocation: sourceLocation)
        return destination["last_error"] as? String ?? ""
    }
}
