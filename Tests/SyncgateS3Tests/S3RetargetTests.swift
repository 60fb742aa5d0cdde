import Foundation
import SyncgateTestSupport
import Testing

/// A bucket's prefix changed in `plugins.yaml` (the real binary against moto, signatures checked): the objects the
/// ledger recorded under the old prefix are not under the new one, so the next sync sends them there; pointed back,
/// the next sync finds them with a HEAD each and sends nothing (docs/engine.md, "A destination pointed elsewhere").
@Suite("S3: a destination pointed elsewhere", .enabled(if: S3TestGate.motoEnabled, S3TestGate.motoComment), .timeLimit(.minutes(10)))
struct S3RetargetTests {
    @Test func aNewPrefixGetsEveryFileAndTheOldOneIsFoundWithoutSending() async throws {
        let server = try await S3TestServer(auth: true, buckets: ["retarget"])
        defer { server.stop() }
        let work = try S3CLITests.Workspace(endpoint: server.endpoint, bucket: "retarget", environment: S3CLITests.environment(server))
        defer { work.dir.remove() }
        for i in 0..<5 { try work.dir.write("outbox/r\(i).json", "{\"record\": \(i)}\n") }
        let config = work.dir.file("plugins.yaml")
        let original = try String(contentsOf: config, encoding: .utf8)

        let first = try await work.run(["sync", "--json"])
        #expect(first.status == 0, "\(first.stderr.suffix(2000))")
        #expect(S3CLITests.Workspace.summary(first)?["uploaded"] as? Int == 5)
        #expect(!first.stderr.contains("now points at"), "the first run records where the copies go and says nothing")

        // Another prefix: the 5 files are sent under it.
        try original.replacingOccurrences(of: "prefix: outbox-", with: "prefix: moved/").write(to: config, atomically: true, encoding: .utf8)
        let puts = server.requests("PUT").count
        let moved = try await work.run(["sync", "--json"])
        #expect(moved.status == 0, "\(moved.stderr.suffix(2000))")
        #expect(S3CLITests.Workspace.summary(moved)?["uploaded"] as? Int == 5, "\(moved.stdout.suffix(1000))")
        #expect(moved.stderr.contains("bucket: the destination now points at s3://retarget/moved/ at \(server.endpoint)"), "\(moved.stderr)")
        #expect(moved.stderr.contains("(it was s3://retarget/outbox- at \(server.endpoint))"), "\(moved.stderr)")
        #expect(server.requests("PUT").filter { $0.contains("/retarget/moved/r") }.count == 5)
        #expect(server.requests("PUT").count - puts == 5)

        // The same again: nothing to do.
        let again = try await work.run(["sync", "--json"])
        #expect(S3CLITests.Workspace.summary(again)?["uploaded"] as? Int == 0)
        #expect(!again.stderr.contains("now points at"))

        // Back to the first prefix, which holds them all: each is looked for (HEAD) and none sent.
        try original.write(to: config, atomically: true, encoding: .utf8)
        let putsBefore = server.requests("PUT").count
        let headsBefore = server.requests("HEAD").count
        let back = try await work.run(["sync", "--json"])
        #expect(back.status == 0, "\(back.stderr.suffix(2000))")
        let summary = try #require(S3CLITests.Workspace.summary(back))
        #expect(summary["uploaded"] as? Int == 0, "\(summary)")
        #expect(summary["already_present"] as? Int == 5, "\(summary)")
        #expect(server.requests("PUT").count == putsBefore)
        #expect(server.requests("HEAD").count - headsBefore == 5)
        let status = try await work.status()
        let destinations = status["destinations"] as? [[String: Any]] ?? []
        #expect(destinations.first?["synced"] as? Int == 5, "\(destinations)")
    }
}
