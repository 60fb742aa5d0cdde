import Crypto
import Foundation
import SyncgateTestSupport
import Testing

/// Multipart uploads resumed across runs: the real `syncgate` binary, killed with SIGKILL in the middle of a large
/// upload to moto (signature checking on), and run again. Bytes sent are counted from moto's request log (one line
/// per UploadPart it answered); the object is read back and hashed with boto3.
@Suite("S3 multipart uploads resumed across runs", .enabled(if: S3TestGate.motoEnabled, S3TestGate.motoComment))
struct S3ResumeAcrossRunsTests {
    struct Workspace {
        let dir: TemporaryDirectory
        let server: S3TestServer
        let bucket: String

        init(server: S3TestServer, bucket: String, extra: String = "") throws {
            self.server = server
            self.bucket = bucket
            dir = try TemporaryDirectory("s3-resume")
            try S3BinaryConfig.write(
                in: dir, server: server, bucket: bucket, keys: true,
                destination: ["multipart: { threshold: 16MiB, part_size: 8MiB, concurrency: 4 }"] + (extra.isEmpty ? [] : [extra]))
        }

        var environment: [String: String] { S3BinaryConfig.keys(server) }

        func run(_ arguments: [String]) async throws -> ProcessResult {
            try await ProcessRunner.run(
                TestPaths.executable("syncgate"), arguments + ["--config", dir.file("plugins.yaml").path],
                environment: environment, currentDirectory: dir.url, timeout: 600)
        }

        /// UploadParts of `key` moto answered 200 so far.
        func partsAnswered(_ key: String) -> Int {
            server.log().split(separator: "\n").filter { $0.contains("\"PUT /\(bucket)/\(key)?partNumber=") && $0.contains("\" 200") }.count
        }

        /// Starts a sync and kills it (SIGKILL) once moto has answered `parts` UploadParts of `key`. Returns whether
        /// the kill came before the sync ended by itself.
        func syncKilled(afterParts parts: Int, of key: String) async throws -> Bool {
            let process = try ProcessRunner.start(
                TestPaths.executable("syncgate"), ["sync", "--config", dir.file("plugins.yaml").path], environment: environment,
                currentDirectory: dir.url)
            let log = server.logFile
            let marker = "\"PUT /\(bucket)/\(key)?partNumber="
            let killed = await ProcessRunner.when(process, timeout: 300, {
                let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                return text.split(separator: "\n").filter { $0.contains(marker) && $0.contains("\" 200") }.count >= parts
            }, then: { kill(process.processIdentifier, SIGKILL) })
            await ProcessRunner.waitForExit(process)
            // moto writes a request's log line once it has answered: parts whose bodies had arrived before the kill
            // may still be logged for a moment. Wait until the count holds still for a second.
            var count = partsAnswered(key)
            for _ in 0..<20 {
                try await Task.sleep(for: .seconds(1))
                let now = partsAnswered(key)
                if now == count { break }
                count = now
            }
            return killed
        }

        /// Writes `size` bytes of seeded content in 8 MiB pieces (never the whole file in memory); returns its SHA-256.
        @discardableResult
        func writeLarge(_ name: String, size: Int, seed: UInt64) throws -> String {
            let url = dir.file("outbox/" + name)
            _ = FileManager.default.createFile(atPath: url.path, contents: nil)
            let handle = try FileHandle(forWritingTo: url)
            defer { try? handle.close() }
            var hash = SHA256()
            var written = 0
            var piece: UInt64 = 0
            while written < size {
                let count = min(8 << 20, size - written)
                let data = S3TestFiles.bytes(count, seed: seed &+ piece &* 7919)
                try handle.write(contentsOf: data)
                hash.update(data: data)
                written += count
                piece += 1
            }
            return hash.finalize().map { String(format: "%02x", $0) }.joined()
        }

        /// Rows of the ledger's `resume_state` table (what is kept to resume uploads).
        func resumeRows() async throws -> Int {
            let result = try await ProcessRunner.run(
                URL(fileURLWithPath: "/usr/bin/sqlite3"), [dir.file(".syncgate/state.sqlite").path, "SELECT COUNT(*) FROM resume_state"])
            return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
    }

    /// kill -9 at about 60% of a 512 MiB upload (64 parts of 8 MiB); the next run sends at most 45% of the bytes
    /// again, and the object is exact.
    @Test func aKilledUploadOf512MiBIsResumedByTheNextRun() async throws {
        let server = try await S3TestServer(buckets: ["resume-runs"])
        defer { server.stop() }
        let work = try Workspace(server: server, bucket: "resume-runs")
        defer { work.dir.remove() }
        let size = 512 << 20
        let sha = try work.writeLarge("big.bin", size: size, seed: 512)
        let parts = 64
        let killed = try await work.syncKilled(afterParts: 39, of: "big.bin")
        #expect(killed, "the sync ended before 60% of its parts")
        let before = work.partsAnswered("big.bin")
        #expect(before >= 39 && before < parts, "parts answered before the kill: \(before)")
        #expect(try await work.resumeRows() == 1, "the ledger keeps the upload to resume")

        let second = try await work.run(["sync", "--json"])
        #expect(second.status == 0, "\(second.output.suffix(2000))")
        let resent = work.partsAnswered("big.bin") - before
        let resentBytes = Int64(resent) * (8 << 20)
        print("resume across runs: killed after \(before) of \(parts) parts; the next run sent \(resent) parts (\(resentBytes >> 20) MiB, \(resent * 100 / parts)% of the file)")
        #expect(resentBytes <= Int64(Double(size) * 0.45), "the second run sent \(resent) parts (\(resentBytes >> 20) MiB) of \(parts)")
        #expect(resent == parts - before, "exactly the missing parts: \(resent) sent, \(parts - before) missing")
        #expect(server.log().contains("GET /resume-runs/big.bin?uploadId="), "ListParts checked what the server holds")
        let stored = try await server.digest(bucket: "resume-runs", key: "big.bin")
        #expect(stored.size == Int64(size) && stored.sha256 == sha, "the object's bytes are exact")
        #expect(try await server.openMultipartUploads(bucket: "resume-runs") == 0)
        #expect(try await work.resumeRows() == 0, "nothing left to resume")
    }

    /// A file changed between the runs starts over: its old upload is aborted and every part is sent.
    @Test func aChangedFileStartsOverAndItsOldUploadIsAborted() async throws {
        let server = try await S3TestServer(buckets: ["resume-changed"])
        defer { server.stop() }
        let work = try Workspace(server: server, bucket: "resume-changed")
        defer { work.dir.remove() }
        try work.writeLarge("file.bin", size: 96 << 20, seed: 1)
        let killed = try await work.syncKilled(afterParts: 5, of: "file.bin")
        #expect(killed, "the sync ended before 5 of its 12 parts")
        let before = work.partsAnswered("file.bin")
        let sha = try work.writeLarge("file.bin", size: 96 << 20, seed: 2)
        let second = try await work.run(["sync"])
        #expect(second.status == 0, "\(second.output.suffix(2000))")
        #expect(work.partsAnswered("file.bin") - before == 12, "all 12 parts of the new bytes were sent")
        #expect(server.log().contains("DELETE /resume-changed/file.bin?uploadId="), "the old upload was aborted")
        let stored = try await server.digest(bucket: "resume-changed", key: "file.bin")
        #expect(stored.sha256 == sha)
        #expect(try await server.openMultipartUploads(bucket: "resume-changed") == 0)
    }

    /// Another client's unfinished upload older than `abort_incomplete_after` is aborted by the next run that sends a
    /// file large enough for multipart (moto answers every upload's Initiated as 2010-11-10, so any is old there),
    /// while this destination's own interrupted upload, judged by its last recorded progress, is resumed.
    @Test func anotherClientsOldUploadIsAbortedAndOursResumed() async throws {
        let server = try await S3TestServer(buckets: ["resume-stale"])
        defer { server.stop() }
        let work = try Workspace(server: server, bucket: "resume-stale", extra: "abort_incomplete_after: 1h")
        defer { work.dir.remove() }
        let sha = try work.writeLarge("ours.bin", size: 96 << 20, seed: 4)
        #expect(try await work.syncKilled(afterParts: 4, of: "ours.bin"), "the sync ended before 4 of its 12 parts")
        let foreign = try await server.startUnfinishedUpload(bucket: "resume-stale", key: "left/behind.bin")
        let result = try await work.run(["sync"])
        #expect(result.status == 0, "\(result.output.suffix(2000))")
        #expect(server.log().contains("DELETE /resume-stale/left/behind.bin?uploadId="), "the other client's upload \(foreign) was aborted")
        #expect(!server.log().contains("DELETE /resume-stale/ours.bin"), "ours was not aborted")
        #expect(server.log().contains("GET /resume-stale/ours.bin?uploadId="), "ours was resumed (ListParts)")
        #expect(try await server.digest(bucket: "resume-stale", key: "ours.bin").sha256 == sha)
        #expect(try await server.openMultipartUploads(bucket: "resume-stale") == 0)
    }

    /// This destination's own interrupted upload with no progress for longer than `abort_incomplete_after` is aborted
    /// and the file sent afresh.
    @Test func ourUploadLeftTooLongIsAbortedAndSentAfresh() async throws {
        let server = try await S3TestServer(buckets: ["resume-old"])
        defer { server.stop() }
        let work = try Workspace(server: server, bucket: "resume-old", extra: "abort_incomplete_after: 2s")
        defer { work.dir.remove() }
        let sha = try work.writeLarge("old.bin", size: 64 << 20, seed: 5)
        #expect(try await work.syncKilled(afterParts: 3, of: "old.bin"), "the sync ended before 3 of its 8 parts")
        let before = work.partsAnswered("old.bin")
        try await Task.sleep(for: .seconds(3))
        let result = try await work.run(["sync"])
        #expect(result.status == 0, "\(result.output.suffix(2000))")
        #expect(server.log().contains("DELETE /resume-old/old.bin?uploadId="), "the old upload was aborted")
        #expect(work.partsAnswered("old.bin") - before == 8, "all 8 parts sent afresh")
        #expect(try await server.digest(bucket: "resume-old", key: "old.bin").sha256 == sha)
        #expect(try await server.openMultipartUploads(bucket: "resume-old") == 0)
    }
}
