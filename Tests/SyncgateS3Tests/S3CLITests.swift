import Foundation
import SyncgateTestSupport
import Testing

/// The real `syncgate` binary syncing to a moto S3 server on loopback (signature checking on), read back with boto3.
@Suite("syncgate binary -> S3 (moto)", .enabled(if: S3TestGate.motoEnabled, S3TestGate.motoComment))
struct S3CLITests {
    static var binary: URL { TestPaths.executable("syncgate") }

    /// A working folder with `plugins.yaml` and `outbox/`.
    struct Workspace {
        let dir: TemporaryDirectory
        var environment: [String: String]

        init(endpoint: String, bucket: String, environment: [String: String], extra: String = "") throws {
            dir = try TemporaryDirectory("s3-cli")
            self.environment = environment
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
                    prefix: outbox-
                    access_key_id: ${S3_TEST_KEY}
                    secret_access_key: ${S3_TEST_SECRET}
                    concurrency: 4
                    retry: { file: 1, artwork: 1, base_delay: 10ms, max_delay: 50ms }
                    multipart: { threshold: 16MiB, part_size: 8MiB, concurrency: 4 }
                \(extra)
                routes:
                  - match: ["**/*"]
                    to: [bucket]
                """)
            try FileManager.default.createDirectory(at: dir.file("outbox"), withIntermediateDirectories: true)
        }

        func run(_ arguments: [String], timeout: TimeInterval = 120) async throws -> ProcessResult {
            try await ProcessRunner.run(
                S3CLITests.binary, arguments + ["--config", dir.file("plugins.yaml").path], environment: environment,
                currentDirectory: dir.url, timeout: timeout)
        }

        static func events(_ stdout: String) -> [[String: Any]] {
            stdout.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
        }

        static func summary(_ result: ProcessResult) -> [String: Any]? {
            events(result.stdout).last { $0["event"] as? String == "summary" }
        }

        func status() async throws -> [String: Any] {
            let result = try await run(["status", "--json"])
            return (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any] ?? [:]
        }
    }

    static func environment(_ server: S3TestServer) -> [String: String] {
        ["S3_TEST_KEY": server.accessKeyID, "S3_TEST_SECRET": server.secretAccessKey]
    }

    @Test func syncReadBackResyncWithoutPutLsRm() async throws {
        let server = try await S3TestServer(buckets: ["cli"])
        defer { server.stop() }
        let work = try Workspace(endpoint: server.endpoint, bucket: "cli", environment: Self.environment(server))
        defer { work.dir.remove() }
        let big = S3TestFiles.bytes(40 << 20, seed: 99)
        let contents: [String: Data] = [
            "a.txt": Data("alpha\n".utf8),
            "dir/with space.txt": Data("spaced out".utf8),
            "empty.txt": Data(),
            "odd ~#.txt": S3TestFiles.bytes(70_000, seed: 5),
            "big.bin": big,
        ]
        for (path, data) in contents { try work.dir.write("outbox/" + path, data) }

        let first = try await work.run(["sync", "--json"])
        #expect(first.status == 0, "\(first.stderr)\n\(first.stdout.suffix(2000))")
        #expect(Workspace.summary(first)?["uploaded"] as? Int == contents.count)

        let readBack = try TemporaryDirectory("s3-cli-readback")
        defer { readBack.remove() }
        let stored = try await server.objects(bucket: "cli", into: readBack.url)
        #expect(Set(stored.keys) == Set(contents.keys.map { "outbox-" + $0 }))
        for (path, data) in contents {
            #expect(stored["outbox-" + path]?.data == data, "\(path): bytes read back with boto3")
        }
        #expect(server.requests("PUT").contains { $0.contains("partNumber=") }, "the 40 MiB file went as multipart")
        #expect(try await server.openMultipartUploads(bucket: "cli") == 0)

        // Nothing changed: no PUT, no multipart, nothing uploaded.
        let putsBefore = server.requests("PUT").count
        let postsBefore = server.requests("POST").count
        let second = try await work.run(["sync", "--json"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(Workspace.summary(second)?["uploaded"] as? Int == 0)
        #expect(server.requests("PUT").count == putsBefore, "a re-sync with no change issued a PUT")
        #expect(server.requests("POST").count == postsBefore)

        // A changed file is sent again, alone.
        try work.dir.write("outbox/a.txt", "alpha, changed\n")
        let third = try await work.run(["sync", "--json"])
        #expect(third.status == 0)
        #expect(Workspace.summary(third)?["uploaded"] as? Int == 1)
        #expect(server.requests("PUT").count == putsBefore + 1)

        // ls lists through ListObjectsV2; rm deletes through DeleteObjects.
        let ls = try await work.run(["ls", "--destination", "bucket", "--json"])
        #expect(ls.status == 0, "\(ls.stderr)")
        for path in contents.keys { #expect(ls.stdout.contains("outbox-" + path), "ls shows \(path)") }
        let rm = try await work.run(["rm", "--destination", "bucket", "outbox-a.txt", "outbox-empty.txt"])
        #expect(rm.status == 0, "\(rm.stderr)")
        let after = try await server.objects(bucket: "cli", into: readBack.file("after"))
        #expect(after["outbox-a.txt"] == nil && after["outbox-empty.txt"] == nil)
        #expect(after["outbox-big.bin"]?.data == big)

        try work.dir.write("outbox/new.txt", "planned, not sent")
        let dryRun = try await work.run(["sync", "--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun.output)")
        #expect(dryRun.output.contains("new.txt"))
        let validate = try await work.run(["validate"])
        #expect(validate.status == 0, "\(validate.output)")
        let status = try await work.run(["status", "--json"])
        let everything = [first, second, third, ls, rm, dryRun, validate, status].map(\.output).joined()
        #expect(!everything.contains(server.secretAccessKey), "the secret leaked into output")
    }

    /// `delete_remote: true` against moto: files removed from the source are deleted from the bucket (DeleteObjects),
    /// the others stay; a run that would delete more than `max_delete` deletes none (exit 1).
    @Test func deleteRemoteMirrorsRemovalsIntoTheBucket() async throws {
        let server = try await S3TestServer(buckets: ["mirror"])
        defer { server.stop() }
        let work = try Workspace(endpoint: server.endpoint, bucket: "mirror", environment: Self.environment(server))
        defer { work.dir.remove() }
        let config = work.dir.file("plugins.yaml")
        let text = try String(contentsOf: config, encoding: .utf8)
        // Four of six files go at once: more than the source's default max_delete_fraction (0.5), which would hold
        // the source back before max_delete is looked at; this test is about max_delete.
        try text.replacingOccurrences(of: "    concurrency: 4\n", with: "    concurrency: 4\n    delete_remote: true\n    max_delete: 3\n")
            .replacingOccurrences(of: "    path: outbox\n", with: "    path: outbox\n    max_delete_fraction: 1\n")
            .write(to: config, atomically: true, encoding: .utf8)
        for i in 0..<6 { try work.dir.write("outbox/d\(i % 2)/f\(i).txt", "file \(i)") }
        let first = try await work.run(["sync"])
        #expect(first.status == 0, "\(first.stderr)")

        for i in 0..<4 { try FileManager.default.removeItem(at: work.dir.file("outbox/d\(i % 2)/f\(i).txt")) }
        let limited = try await work.run(["sync", "--json"])
        #expect(limited.status == 1, "\(limited.stderr)")
        #expect((Workspace.summary(limited)?["delete_limits"] as? [[String: Any]])?.first?["wanted"] as? Int == 4)
        let readBack = try TemporaryDirectory("s3-cli-mirror")
        defer { readBack.remove() }
        #expect(try await server.objects(bucket: "mirror", into: readBack.file("limited")).count == 6, "nothing deleted")

        let allowed = try await work.run(["sync", "--json", "--max-delete", "4"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(Workspace.summary(allowed)?["remote_deleted"] as? Int == 4)
        let left = try await server.objects(bucket: "mirror", into: readBack.file("after"))
        #expect(Set(left.keys) == ["outbox-d0/f4.txt", "outbox-d1/f5.txt"])
        #expect(server.requests("POST").contains { $0.contains("delete") }, "deleted with DeleteObjects")
        let status = try await work.status()
        let bucket = (status["destinations"] as? [[String: Any]])?.first
        #expect(bucket?["synced"] as? Int == 2, "\(String(describing: bucket))")
    }

    @Test func wrongSecretBlocksTheDestinationWithTheS3ErrorInStatus() async throws {
        let server = try await S3TestServer(buckets: ["wrong"])
        defer { server.stop() }
        let wrongSecret = "Wrong/Secret+Key00000000000000000000000000"
        let work = try Workspace(
            endpoint: server.endpoint, bucket: "wrong",
            environment: ["S3_TEST_KEY": server.accessKeyID, "S3_TEST_SECRET": wrongSecret])
        defer { work.dir.remove() }
        try work.dir.write("outbox/a.txt", "never arrives")
        let result = try await work.run(["sync", "--json"])
        #expect(result.status == 1, "\(result.stderr)")
        let status = try await work.status()
        let files = status["files"] as? [[String: Any]] ?? []
        let file = try #require(files.first { ($0["path"] as? String)?.hasSuffix("a.txt") == true }, "\(status)")
        // Credentials refused are the destination's problem, not the file's: it waits, with no attempt counted.
        #expect(file["status"] as? String == "pending")
        #expect(file["attempts"] as? Int == 0)
        let destination = try #require((status["destinations"] as? [[String: Any]])?.first)
        #expect(destination["state"] as? String == "blocked")
        #expect(destination["error_code"] as? String == "SignatureDoesNotMatch", "\(destination)")
        #expect((destination["last_error"] as? String)?.contains("SignatureDoesNotMatch") == true, "\(destination)")
        // The same settings again: not tried at all.
        #expect(try await work.run(["sync"]).status == 1)
        let statusText = try await work.run(["status", "--json"]).output
        #expect(!(result.output + statusText).contains(wrongSecret))
        #expect(server.requests("PUT").filter { $0.contains("/wrong/outbox-a.txt") }.count == 1, "one attempt only")
    }

    @Test func stoppedServerIsRetryableThenDeliveredAfterRestart() async throws {
        let port = Loopback.freePort()
        var work = try Workspace(
            endpoint: "http://127.0.0.1:\(port)", bucket: "restart",
            environment: ["S3_TEST_KEY": "AKIAPLACEHOLDER00000", "S3_TEST_SECRET": "placeholder-secret"])
        defer { work.dir.remove() }
        try work.dir.write("outbox/later.txt", "delivered after the restart")
        let down = try await work.run(["sync", "--json"])
        #expect(down.status == 75, "the file waits for the endpoint: \(down.stderr)")
        let status = try await work.status()
        let files = status["files"] as? [[String: Any]] ?? []
        #expect(files.first?["status"] as? String == "pending")
        #expect(files.first?["attempts"] as? Int == 0, "no attempt counted: the endpoint was away, not the file wrong")
        let destination = try #require((status["destinations"] as? [[String: Any]])?.first)
        #expect(destination["state"] as? String == "unavailable")
        #expect((destination["last_error"] as? String)?.contains("connection refused") == true, "\(destination)")

        let server = try await S3TestServer(port: port, buckets: ["restart"])
        defer { server.stop() }
        work.environment = Self.environment(server)
        // The next run probes the endpoint and sends what waited.
        let up = try await work.run(["sync", "--json"])
        #expect(up.status == 0, "\(up.stderr)\n\(up.stdout)")
        #expect(Workspace.summary(up)?["uploaded"] as? Int == 1)
        let readBack = try TemporaryDirectory("s3-restart")
        defer { readBack.remove() }
        #expect(try await server.objects(bucket: "restart", into: readBack.url)["outbox-later.txt"]?.data == Data("delivered after the restart".utf8))
    }

    /// `examples/s3.yaml` as shipped, pointed at this test's moto port and folders, credentials from AWS_* variables.
    @Test func shippedExampleSyncsToTheLocalServer() async throws {
        let server = try await S3TestServer(buckets: ["syncgate-demo"])
        defer { server.stop() }
        let dir = try TemporaryDirectory("s3-example")
        defer { dir.remove() }
        let example = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("examples/s3.yaml"), encoding: .utf8)
        #expect(example.contains("endpoint: http://127.0.0.1:5000"))
        let text = example
            .replacingOccurrences(of: "http://127.0.0.1:5000", with: server.endpoint)
            .replacingOccurrences(of: "path: outbox ", with: "path: \(dir.file("outbox").path) ")
            .replacingOccurrences(of: "state: .syncgate/s3-example.sqlite", with: "state: \(dir.file("state.sqlite").path)")
        try dir.write("s3.yaml", text)
        try dir.write("outbox/hello.txt", "hello from the example\n")
        let environment = [
            "AWS_ACCESS_KEY_ID": server.accessKeyID, "AWS_SECRET_ACCESS_KEY": server.secretAccessKey,
            "AWS_SESSION_TOKEN": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "us-east-1",
        ]
        let sync = try await ProcessRunner.run(Self.binary, ["sync", "--config", dir.file("s3.yaml").path], environment: environment, timeout: 60)
        #expect(sync.status == 0, "\(sync.output)")
        let ls = try await ProcessRunner.run(
            Self.binary, ["ls", "--config", dir.file("s3.yaml").path, "--destination", "bucket"], environment: environment, timeout: 60)
        #expect(ls.stdout.contains("outbox-hello.txt"), "\(ls.output)")
        let readBack = try TemporaryDirectory("s3-example-readback")
        defer { readBack.remove() }
        #expect(try await server.objects(bucket: "syncgate-demo", into: readBack.url)["outbox-hello.txt"]?.data == Data("hello from the example\n".utf8))
    }
}
