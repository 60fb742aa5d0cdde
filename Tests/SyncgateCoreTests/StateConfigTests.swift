import Foundation
import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport
import Testing

/// `state:`: the path of an SQLite file, or a PostgreSQL URL with its password from the URL, `PGPASSWORD` or a
/// `password_file`; the password never shown.
@Suite("state: SQLite path or PostgreSQL URL, password sources, located errors")
struct StateConfigTests {
    let registry = PluginRegistry([LocalDestination.registration])

    func parse(_ state: String, env: [String: String] = [:], base: URL = URL(fileURLWithPath: "/cfg")) throws -> GatewayConfig {
        try GatewayConfig.parse(text: """
            version: 1
            state: \(state)
            sources: [{name: outbox, path: out}]
            destinations: [{name: archive, type: local, path: synced}]
            """, file: "plugins.yaml", baseDirectory: base, registry: registry, environment: env)
    }

    func postgres(_ config: GatewayConfig) throws -> PostgresStateLocation {
        guard case .postgres(let location) = config.state else {
            Issue.record("expected a PostgreSQL state, found \(config.state)")
            throw PostgresTestServerError("not PostgreSQL")
        }
        return location
    }

    func errors(_ state: String, env: [String: String] = [:]) -> [String] {
        do {
            _ = try parse(state, env: env)
            return []
        } catch let error as ConfigError {
            return error.all.map(\.description)
        } catch {
            return ["\(error)"]
        }
    }

    @Test func aPathIsAnSQLiteFileBesideTheConfig() throws {
        #expect(try parse("state/ledger.sqlite").state == .sqlite(path: "/cfg/state/ledger.sqlite"))
        #expect(try parse("/var/lib/syncgate/state.sqlite").statePath == "/var/lib/syncgate/state.sqlite")
    }

    @Test func urlForms() throws {
        var location = try postgres(try parse("postgres://sync@db.example/ledger"))
        #expect(location.host == "db.example" && location.port == 5432 && location.user == "sync" && location.database == "ledger")
        #expect(location.password == nil && location.tls == .disable)

        location = try postgres(try parse("postgresql://sync:s3cret-pw@db.example:6543/ledger?sslmode=require"))
        #expect(location.port == 6543 && location.tls == .require)
        #expect(location.password?.reveal() == "s3cret-pw")

        location = try postgres(try parse("\"postgres://sync:p%40ss%2Fw0rd@[::1]:5433/led%20ger\""))
        #expect(location.host == "::1" && location.port == 5433 && location.database == "led ger")
        #expect(location.password?.reveal() == "p@ss/w0rd")
        #expect(location.displayName == "postgres://sync@[::1]:5433/led ger")
    }

    @Test func thePasswordComesFromTheURLThenPGPASSWORDThenAPasswordFile() throws {
        let dir = try TemporaryDirectory("sg-state-config")
        defer { dir.remove() }
        try dir.write("secrets/pg", "from-the-file-pw\n")
        let inURL = "{url: \"postgres://sync:from-the-url-pw@db/ledger\", password_file: secrets/pg}"
        let noneInURL = "{url: \"postgres://sync@db/ledger\", password_file: secrets/pg}"
        #expect(try postgres(try parse(inURL, env: ["PGPASSWORD": "from-env-pw"], base: dir.url)).password?.reveal() == "from-the-url-pw")
        #expect(try postgres(try parse(noneInURL, env: ["PGPASSWORD": "from-env-pw"], base: dir.url)).password?.reveal() == "from-env-pw")
        #expect(try postgres(try parse(noneInURL, base: dir.url)).password?.reveal() == "from-the-file-pw")
        #expect(try postgres(try parse("postgres://sync@db/ledger", env: ["PGPASSWORD": "from-env-pw"])).password?.reveal() == "from-env-pw")
        #expect(try postgres(try parse("postgres://sync@db/ledger")).password == nil)
    }

    @Test func thePasswordIsNeverShown() throws {
        let config = try parse("postgres://sync:never-shown-pw@db.example/ledger")
        #expect(config.statePath == "postgres://sync@db.example:5432/ledger")
        #expect(!"\(config.state)".contains("never-shown-pw"))
        #expect(!String(reflecting: config.state).contains("never-shown-pw"))
        #expect(Redactor.shared.redact("connect postgres://sync:never-shown-pw@db.example/ledger failed") == "connect postgres://sync:<redacted>@db.example/ledger failed")
        let fromEnv = try parse("postgres://sync@db.example/ledger", env: ["PGPASSWORD": "env-never-shown"])
        #expect(fromEnv.statePath == "postgres://sync@db.example:5432/ledger")
        #expect(Redactor.shared.redact("password env-never-shown") == "password <redacted>")
        #expect(LedgerError(path: fromEnv.statePath, message: "x").description == "state database postgres://sync@db.example:5432/ledger: x")
    }

    @Test func mistakesNameTheLineColumnAndKey() {
        #expect(errors("postgres://sync@db:99999/ledger") == ["plugins.yaml:2:8: state: '99999' is not a port (1-65535)"])
        #expect(errors("postgres://db/ledger") == ["plugins.yaml:2:8: state: the URL names no user (postgres://user@host/database)"])
        #expect(errors("postgres://sync@db") == ["plugins.yaml:2:8: state: the URL names no database (postgres://user@host/database)"])
        #expect(errors("postgres://sync@db/ledger?sslmode=sometimes").first?.hasPrefix("plugins.yaml:2:8: state: sslmode 'sometimes'") == true)
        #expect(errors("{url: /var/lib/state.sqlite}").first?.hasPrefix("plugins.yaml:2:14: state.url: must be a postgres:// URL") == true)
        #expect(errors("{url: \"postgres://sync@db/ledger\", pasword_file: x}").contains { $0.contains("state.pasword_file") })
        #expect(errors("{url: \"postgres://sync@db/ledger\", password_file: /nonexistent/pg}").first?.contains("state.password_file: the secret file /nonexistent/pg does not exist") == true)
    }
}
