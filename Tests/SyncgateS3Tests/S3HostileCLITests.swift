import Foundation
import SyncgateTestSupport
import Testing

/// Issue 20 with the built `syncgate` binary where the behaviour is the plugin's: `ls` against a listing that never
/// ends or goes round, `ls` / `rm` / `retry` against a stalled server, and sync / retry / sync against a server that
/// stores other bytes than it was sent. Each run must end with a clear error within its deadlines, in bounded
/// memory, and never record a wrong copy as synced. (Bounds are generous: they catch a hang or a leak, not a slow
/// machine; the figures are printed.)
@Suite("syncgate binary -> hostile S3 peers", .enabled(if: S3TestGate.motoEnabled, S3TestGate.motoComment))
struct S3HostileCLITests {
    typealias Workspace = S3CLITests.Workspace

    static let placeholderKeys = ["S3_TEST_KEY": "AKIAHOSTILE000000000", "S3_TEST_SECRET": "hostile-cli-secret-value"]

    static func workspace(_ server: S3HostileServer, extra: String = "") throws -> Workspace {
        try Workspace(endpoint: server.endpoint, bucket: "hostile", environment: placeholderKeys, extra: extra)
    }

    static func figures(_ label: String, _ result: ProcessResult) -> String {
        "\(label): exit \(result.status) after \(String(format: "%.1f", result.seconds)) s, peak \((result.peakMemoryKiB ?? 0) / 1024) MiB"
    }

    @Test func lsAgainstAnEndlessListingEndsWithAClearErrorInBoundedMemory() async throws {
        let server = try await S3HostileServer(.endlessList)
        defer { server.stop() }
        let work = try Self.workspace(server)
        defer { work.dir.remove() }
        // 400 pages of 1,000 names from a Python server: about 40 s on a quiet machine, twice that on a busy one.
        let ls = try await work.run(["ls", "--destination", "bucket"], timeout: 400)
        print(Self.figures("ls against an endless listing", ls))
        #expect(ls.status == 1, "\(ls.stderr.suffix(500))")
        #expect(ls.stderr.contains("bucket: cannot list"), "\(ls.stderr.suffix(500))")
        #expect(ls.stderr.contains("ListingTooLong") && ls.stderr.contains("names"), "\(ls.stderr.suffix(500))")
        let peak = try #require(ls.peakMemoryKiB)
        #expect(peak < 128 << 10, "peak memory \(peak / 1024) MiB")
        #expect(!ls.output.contains(Self.placeholderKeys["S3_TEST_SECRET"]!))
    }

    @Test func lsAgainstARepeatedContinuationTokenEndsWithAClearError() async throws {
        let server = try await S3HostileServer(.repeatToken)
        defer { server.stop() }
        let work = try Self.workspace(server)
        defer { work.dir.remove() }
        let ls = try await work.run(["ls", "--destination", "bucket", "--json"])
        print(Self.figures("ls against a repeated token", ls))
        #expect(ls.status == 1)
        #expect(ls.stderr.contains("ListingLoop") && ls.stderr.contains("continuation token"), "\(ls.stderr)")
        #expect(ls.stdout.isEmpty, "nothing listed as if it were the whole: \(ls.stdout.prefix(300))")
    }

    @Test func lsAndRmAgainstAStalledServerEndWithAClearError() async throws {
        let server = try await S3HostileServer(.stall, maxSeconds: 200)
        defer { server.stop() }
        let work = try Self.workspace(server, extra: "    request_timeout: 2s")
        defer { work.dir.remove() }
        let ls = try await work.run(["ls", "--destination", "bucket"])
        print(Self.figures("ls against a stalled server", ls))
        #expect(ls.status == 1)
        #expect(ls.stderr.contains("no answer from \(server.endpoint) within 2s"), "\(ls.stderr)")
        #expect(ls.seconds < 30)

        let rm = try await work.run(["rm", "--destination", "bucket", "outbox-a.txt"])
        print(Self.figures("rm against a stalled server", rm))
        #expect(rm.status == 1)
        #expect(rm.stdout.contains("failed   outbox-a.txt") && rm.stdout.contains("within 2s"), "\(rm.output)")
        #expect(rm.seconds < 60, "rm retries once (retry.file: 1), each request bounded by 2 s")
    }

    @Test func retryAgainstAStalledServerEndsWithinItsDeadlines() async throws {
        let server = try await S3HostileServer(.stall, maxSeconds: 300)
        defer { server.stop() }
        let work = try Self.workspace(server, extra: "    attempt_timeout: 3s\n    request_timeout: 5s")
        defer { work.dir.remove() }
        try work.dir.write("outbox/a.txt", "never answered")
        let sync = try await work.run(["sync", "--json"])
        print(Self.figures("sync against a stalled server", sync))
        #expect(sync.status == 75, "retryable failures only: \(sync.stderr.suffix(500))")
        #expect(sync.seconds < 60)
        // `retry` checks what the earlier attempts left (HEAD), then sends again: both bounded.
        let retry = try await work.run(["retry", "--json"])
        print(Self.figures("retry against a stalled server", retry))
        #expect(retry.status == 75, "\(retry.stderr.suffix(500))")
        #expect(retry.seconds < 60, "before the fix: 126 s")
        let files = try await work.status()["files"] as? [[String: Any]] ?? []
        #expect(files.first?["status"] as? String != "synced")
    }

    @Test func syncRetrySyncAgainstACorruptingServerNeverRecordsTheFileSynced() async throws {
        let server = try await S3HostileServer(.corrupt)
        defer { server.stop() }
        let work = try Self.workspace(server)
        defer { work.dir.remove() }
        try work.dir.write("outbox/a.txt", "these bytes must arrive as they are")
        // The second sync finds the retry not yet due (a minute after the failed run) and sends nothing: the file must
        // still not count as synced.
        for (index, command) in [["sync", "--json"], ["retry", "--json"], ["sync", "--json"]].enumerated() {
            let result = try await work.run(command)
            print(Self.figures(command[0] + " against a corrupting server", result) + ", HEADs so far: \(server.requests("HEAD").count)")
            #expect(result.status == 75, "\(command[0]): \(result.stdout.suffix(800))")
            if index < 2 {
                #expect(Workspace.summary(result)?["failed"] as? Int == 1, "\(command[0]): \(result.stdout.suffix(800))")
            }
            let status = try await work.status()
            let files = status["files"] as? [[String: Any]] ?? []
            let file = try #require(files.first { ($0["path"] as? String) == "a.txt" }, "\(command[0]): \(status)")
            #expect(file["status"] as? String == "failed", "\(command[0]): \(file)")
            #expect(file["error_code"] as? String == "BadDigest", "\(command[0]): \(file)")
            let synced = (status["destinations"] as? [[String: Any]])?.first?["synced"] as? Int
            #expect(synced == 0, "\(command[0]): \(status)")
        }
        #expect(server.requests("PUT").count >= 3, "sent again each time: \(server.requests("PUT"))")
    }
}
