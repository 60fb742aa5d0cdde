import Foundation
import SyncgateTestSupport
import Testing

/// `existing: check`: a runner that starts with an empty ledger (a CI job) finds what an earlier one delivered with
/// a few listings, sends only what differs, and records the rest synced. The real binary against moto, with its
/// signature checking off: moto answers SignatureDoesNotMatch to a correctly signed query holding a `/`
/// (`prefix=outbox-records/&delimiter=/`), as ../shared/docs/s3-test-servers.md says; the signing of such queries is
/// tested against the official SigV4 vectors (SigV4SignerTests).
@Suite("S3 existing: check", .enabled(if: S3TestGate.motoEnabled, S3TestGate.motoComment), .timeLimit(.minutes(30)))
struct S3ExistingCheckTests {
    @Test func aFreshLedgerOverTwoThousandObjectsSendsOnlyWhatDiffers() async throws {
        let server = try await S3TestServer(auth: false, buckets: ["ci-runner"])
        defer { server.stop() }
        let work = try S3CLITests.Workspace(endpoint: server.endpoint, bucket: "ci-runner", environment: S3CLITests.environment(server),
                                            extra: "    existing: check")
        defer { work.dir.remove() }
        for i in 0..<1_990 { try work.dir.write(String(format: "outbox/records/r%04d.json", i), "{\"record\": \(i)}\n") }
        for i in 0..<9 { try work.dir.write("outbox/art/cover\(i).png", S3TestFiles.bytes(3_000 + i, seed: UInt64(i))) }
        try work.dir.write("outbox/big/trailer.mp4", S3TestFiles.bytes(20 << 20, seed: 77))  // a multipart upload (3 parts of 8 MiB)

        let first = try await work.run(["sync", "--json"], timeout: 600)
        #expect(first.status == 0, "\(first.stderr.suffix(2000))")
        #expect(S3CLITests.Workspace.summary(first)?["uploaded"] as? Int == 2_000)

        // Another runner: the same tree, no ledger; one file changed and one new.
        try FileManager.default.removeItem(at: work.dir.file(".syncgate"))
        try work.dir.write("outbox/records/r0007.json", "{\"record\": 7, \"fixed\": true}\n")
        try work.dir.write("outbox/records/new.json", "{\"record\": \"new\"}\n")
        let putsBefore = server.requests("PUT").count
        let listsBefore = server.requests("GET").filter { $0.contains("list-type=2") }.count
        let headsBefore = server.requests("HEAD").count
        let second = try await work.run(["sync", "--json"], timeout: 600)
        #expect(second.status == 0, "\(second.stderr.suffix(2000))")
        let summary = try #require(S3CLITests.Workspace.summary(second))
        #expect(summary["uploaded"] as? Int == 2, "the changed file and the new one: \(summary)")
        #expect(summary["already_present"] as? Int == 1_999, "\(summary)")
        #expect(server.requests("PUT").count - putsBefore == 2)
        let lists = server.requests("GET").filter { $0.contains("list-type=2") }.count - listsBefore
        #expect(lists >= 3 && lists <= 6, "one listing per folder (records/ takes two pages of 1,000): \(lists)")
        #expect(server.requests("HEAD").count - headsBefore == 0, "no HEAD per file")

        // The ledger now knows every file: a third run sends and lists nothing.
        let third = try await work.run(["sync", "--json"])
        #expect(third.status == 0)
        #expect(S3CLITests.Workspace.summary(third)?["uploaded"] as? Int == 0)
        let status = try await work.status()
        let destinations = status["destinations"] as? [[String: Any]] ?? []
        #expect(destinations.first?["synced"] as? Int == 2_001, "\(destinations)")
    }
}
