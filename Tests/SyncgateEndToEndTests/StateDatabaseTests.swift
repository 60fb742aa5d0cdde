import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// The state file under stress: damaged, foreign, or on a full disk.
@Suite("state database")
struct StateDatabaseTests {
    func config(_ dir: TemporaryDirectory, state: String) throws {
        try dir.write("plugins.yaml", """
            version: 1
            state: \(state)
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: archive, type: local, path: synced, fsync: false}]
            """)
    }

    /// The state file holds what destinations answered: a new one is 0600 in a new 0700 folder (its WAL and shared
    /// memory too), and one left readable by others by an older version loses those permissions at the next run.
    @Test func theStateFileIsItsOwnersAlone() async throws {
        let dir = try TemporaryDirectory("sg-modes")
        defer { dir.remove() }
        try config(dir, state: "private/deeper/state.sqlite")
        try dir.write("outbox/a.txt", "a")
        let cli = SyncgateCLI(dir: dir)
        #expect(try await cli.run(["sync"]).status == 0)
        func mode(_ path: String) -> mode_t? {
            var st = stat()
            return stat(dir.file(path).path, &st) == 0 ? st.st_mode & 0o777 : nil
        }
        #expect(mode("private") == 0o700 && mode("private/deeper") == 0o700)
        for file in ["state.sqlite", "state.sqlite-wal", "state.sqlite-shm", "state.sqlite.lock"] where dir.exists("private/deeper/" + file) {
            #expect(mode("private/deeper/" + file) == 0o600, "\(file): \(String(describing: mode("private/deeper/" + file)))")
        }
        chmod(dir.file("private/deeper/state.sqlite").path, 0o644)
        #expect(try await cli.run(["status"]).status == 0)
        #expect(mode("private/deeper/state.sqlite") == 0o600, "tightened by the next run")
    }

    @Test func aDamagedStateFileIsReportedAndLeftAlone() async throws {
        let dir = try TemporaryDirectory("sg-corrupt")
        defer { dir.remove() }
        try config(dir, state: "state.sqlite")
        try dir.write("outbox/a.txt", "a")
        let cli = SyncgateCLI(dir: dir)
        #expect(try await cli.run(["sync"]).status == 0)
        // Everything into the main file first: a process that ends with its ledger still referenced leaves its pages
        // in the write-ahead log, where SQLite would read them past the garbage below (seen once in a full run).
        let checkpoint = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/sqlite3"), [dir.file("state.sqlite").path, "PRAGMA wal_checkpoint(TRUNCATE);"])
        try #require(checkpoint.status == 0, "\(checkpoint.stderr)")
        // Overwrite the start of the database (its header) with garbage.
        let handle = try FileHandle(forUpdating: dir.file("state.sqlite"))
        try handle.seek(toOffset: 0)
        try handle.write(contentsOf: Data(repeating: 0xEE, count: 4096))
        try handle.close()
        let damaged = try dir.read("state.sqlite")
        for command in [["sync"], ["status"]] {
            let result = try await cli.run(command)
            #expect(result.status == 78, "\(command): \(result.stderr)")
            #expect(result.stderr.contains("state file"), "\(result.stderr)")
            #expect(result.stderr.contains("damaged") || result.stderr.contains("not a syncgate state file"), "\(result.stderr)")
        }
        #expect(try dir.read("state.sqlite") == damaged, "never silently replaced")
    }

    @Test func aForeignDatabaseIsRefused() async throws {
        let dir = try TemporaryDirectory("sg-foreign")
        defer { dir.remove() }
        try config(dir, state: "app.db")
        try dir.write("outbox/a.txt", "a")
        let made = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/sqlite3"), [dir.file("app.db").path, "CREATE TABLE users (id INTEGER);"])
        try #require(made.status == 0)
        let result = try await SyncgateCLI(dir: dir).run(["sync"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("another program"))
        #expect(!dir.exists("synced/a.txt"), "nothing is sent without a ledger")
    }

    /// The state on a 256 KiB tmpfs fills up: the run fails loudly, rows written before stay, and after the disk
    /// is grown a run completes.
    @Test func aFullDiskFailsLoudlyWithoutLosingEarlierRows() async throws {
        let dir = try TemporaryDirectory("sg-full")
        defer { dir.remove() }
        let mountPoint = dir.file("state")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let mount = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=256k", "tmpfs", mountPoint.path])
        try #require(mount.status == 0 || !TestPaths.serversRequired, "mount a tmpfs: \(mount.stderr)")
        guard mount.status == 0 else { return }  // no permission to mount here (a user's machine): nothing to test
        defer { _ = try? ProcessRunner.runBlocking(URL(fileURLWithPath: "/bin/umount"), [mountPoint.path]) }
        try config(dir, state: "state/state.sqlite")
        let cli = SyncgateCLI(dir: dir)
        try dir.write("outbox/first.txt", "first")
        #expect(try await cli.run(["sync"]).status == 0)

        let longName = String(repeating: "n", count: 200)
        for i in 0..<1500 { try dir.write("outbox/many/\(longName)-\(i).txt", "\(i)") }
        let full = try await cli.run(["sync"])
        #expect(full.status != 0)
        #expect(full.stderr.contains("disk is full"), "\(full.stderr)")

        _ = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/mount"), ["-o", "remount,size=64m", mountPoint.path])
        let status = try await #require(SyncgateCLI.json(try cli.run(["status", "--json"]).stdout))
        #expect((status["destinations"] as? [[String: Any]])?.first?["synced"] as? Int ?? 0 >= 1, "the earlier row is still there")
        let again = try await cli.run(["sync", "--json"])
        #expect(again.status == 0, "\(again.stderr)")
        let after = try await #require(SyncgateCLI.json(try cli.run(["status", "--json"]).stdout))
        #expect((after["destinations"] as? [[String: Any]])?.first?["synced"] as? Int == 1501)
    }

    @Test func aStateFileOfTheFirstSchemaIsUpgradedInPlaceAndANewerOneIsRefused() async throws {
        let dir = try TemporaryDirectory("sg-schema")
        defer { dir.remove() }
        try config(dir, state: "state.sqlite")
        try dir.write("outbox/a.txt", "a")
        let cli = SyncgateCLI(dir: dir)
        #expect(try await cli.run(["sync"]).status == 0)
        let sqlite = URL(fileURLWithPath: "/usr/bin/sqlite3")
        let state = dir.file("state.sqlite").path
        // As the syncgate before destination states wrote it: files only, schema 1, no record of runs.
        let downgraded = try await ProcessRunner.run(sqlite, [state, """
            DROP TABLE destinations; DROP TABLE resume_state; DROP INDEX files_removed;
            ALTER TABLE files DROP COLUMN removed; ALTER TABLE files DROP COLUMN removed_at;
            DROP INDEX files_claimed; ALTER TABLE files DROP COLUMN claimed_by; ALTER TABLE files DROP COLUMN lease_until;
            DROP TABLE source_roots; DROP TABLE remote_deletions; DROP TABLE destination_leaders; DROP TABLE verifications;
            DROP TABLE destination_targets;
            DROP TABLE instances; DROP TABLE instance_walks;
            UPDATE syncgate_meta SET value = '1' WHERE key = 'schema';
            DELETE FROM syncgate_meta WHERE key LIKE 'last_run_%';
            """])
        #expect(downgraded.status == 0, "\(downgraded.stderr)")
        let status = try await cli.run(["status"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(!status.stdout.contains("No sync has run"), "\(status.stdout)")
        #expect(status.stdout.contains("Every routed file is synced"), "\(status.stdout)")
        try dir.write("outbox/b.txt", "b")
        let sync = try await cli.run(["sync", "--json"])
        #expect(sync.status == 0, "\(sync.stderr)")
        #expect(sync.stdout.contains("\"uploaded\":1"), "the old rows are kept: only the new file is sent")
        let schema = try await ProcessRunner.run(sqlite, [state, "SELECT value FROM syncgate_meta WHERE key = 'schema'; SELECT COUNT(*) FROM destinations; SELECT COUNT(*) FROM resume_state; SELECT COUNT(*) FROM files WHERE removed IS NULL;"])
        #expect(schema.stdout.split(separator: "\n") == ["\(Ledger.schemaVersion)", "1", "0", "2"], "\(schema.stdout)")

        // Written by a newer syncgate: refused, untouched.
        _ = try await ProcessRunner.run(sqlite, [state, "UPDATE syncgate_meta SET value = '\(Ledger.schemaVersion + 1)' WHERE key = 'schema';"])
        let newer = try await cli.run(["sync"])
        #expect(newer.status == 78, "\(newer.stderr)")
        #expect(newer.stderr.contains("written by a newer syncgate (schema \(Ledger.schemaVersion + 1)"), "\(newer.stderr)")
    }
}
