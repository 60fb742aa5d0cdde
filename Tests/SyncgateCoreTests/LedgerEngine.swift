import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// The engines the ledger runs on, for tests that run once on each (`@Test(arguments: LedgerEngine.testable)`):
/// SQLite in a temporary folder, PostgreSQL on the test server (``PostgresTestServer``), a database per ledger.
enum LedgerEngine: String, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    /// SQLite always; PostgreSQL when its server can be started here or `SYNCGATE_REQUIRE_SERVERS=1` (then a
    /// missing server fails the PostgreSQL cases).
    static var testable: [LedgerEngine] { PostgresTestServer.enabled ? [.sqlite, .postgres] : [.sqlite] }

    var testDescription: String { rawValue }

    /// Where the ledgers of one test live: `state(name)` gives a fresh one per name (a file in `dir`, or a new
    /// database on the shared server); `server` is the PostgreSQL server (nil for SQLite).
    func withStates<T>(
        _ dir: TemporaryDirectory,
        _ body: (_ state: (String) async throws -> StateLocation, _ server: PostgresTestServer?) async throws -> T
    ) async throws -> T {
        switch self {
        case .sqlite:
            return try await body({ name in .sqlite(path: dir.file("\(name).sqlite").path) }, nil)
        case .postgres:
            await LedgerLoopGate.shared.enterShared()
            defer { LedgerLoopGate.shared.leaveShared() }
            return try await PostgresTestServer.withDatabase { _, server in
                try await body({ name in
                    .postgres(try PostgresStateLocation.parse(server.url(database: try await server.createDatabase(name))))
                }, server)
            }
        }
    }

    /// Runs SQL on a ledger's database behind its back (sqlite3, or psql as the admin).
    static func rawSQL(_ sql: String, on state: StateLocation, server: PostgresTestServer?) async throws -> String {
        switch state {
        case .sqlite(let path):
            let result = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/sqlite3"), [path, sql])
            try #require(result.status == 0, "sqlite3: \(result.stderr)")
            return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        case .postgres(let location):
            return try await #require(server).psql(sql, database: location.database)
        }
    }
}
