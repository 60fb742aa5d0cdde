import Foundation

/// A PostgreSQL server of its own for tests: `initdb` into a temporary folder, `postgres` on a free loopback port
/// with its socket in that folder, stopped by ``stop()`` (SIGTERM, then SIGKILL, reaped). Logins: the superuser
/// ``adminUser`` without a password (trust, loopback only), and ``user`` with ``password`` (scram-sha-256), which
/// the ledger tests connect as, so that password handling is tried every time. As root (postgres refuses to run as
/// root), the server runs as `nobody` through `setpriv`, its folder handed to that user.
///
/// Most tests share one server per test process (``withDatabase(_:)``: a fresh database each), started by the first
/// and stopped when the last one ends.
public final class PostgresTestServer: @unchecked Sendable {
    public let port: Int
    public let folder: TemporaryDirectory
    public static let adminUser = "syncgate_admin"
    public static let user = "syncgate"
    public static let password = "pg-test-secret-7Qx"
    private var process: ChildProcess?
    private let binaries: Binaries

    /// The programs of one PostgreSQL installation.
    struct Binaries {
        var initdb: URL
        var postgres: URL
        var psql: URL
    }

    /// Where the binaries are looked for: PATH, /usr/local/bin, then Debian's /usr/lib/postgresql/<version>/bin
    /// (the newest first), where `apt-get install postgresql` puts them, off PATH.
    static let binaries: Binaries? = {
        var folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        folders.append("/usr/local/bin")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) { folders.append("/usr/lib/postgresql/\(version)/bin") }
        func find(_ name: String) -> URL? {
            folders.lazy.map { URL(fileURLWithPath: $0).appendingPathComponent(name) }.first { FileManager.default.isExecutableFile(atPath: $0.path) }
        }
        guard let initdb = find("initdb"), let postgres = find("postgres"), let psql = find("psql") else { return nil }
        return Binaries(initdb: initdb, postgres: postgres, psql: psql)
    }()

    /// Why no server can be started here, or nil when one can.
    public static let unavailableReason: String? = {
        guard binaries != nil else {
            return "PostgreSQL's initdb, postgres and psql are not installed (scripts/test-deps.d/postgres.sh installs them)"
        }
        if getuid() == 0, !FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") {
            return "running as root, and setpriv (to run postgres as nobody) is missing"
        }
        return nil
    }()

    /// Whether the tests that need a server run: when it can be started, and always under
    /// `SYNCGATE_REQUIRE_SERVERS=1` (a missing server is then a failure, not a skip).
    public static var enabled: Bool { unavailableReason == nil || TestPaths.serversRequired }
    public static let comment = "needs PostgreSQL's server binaries (scripts/test-deps.d/postgres.sh installs them)"

    /// Starts a server and waits (at most 60 s) until it accepts connections.
    public init() async throws {
        if let reason = PostgresTestServer.unavailableReason { throw PostgresTestServerError(reason) }
        binaries = PostgresTestServer.binaries!
        PostgresTestServer.stopOrphans()
        port = Loopback.freePort()
        folder = try TemporaryDirectory("pg-\(port)")
        await ServerStartGate.shared.enter()
        defer { ServerStartGate.shared.leave() }
        do {
            try await launch()
        } catch {
            stop()
            throw error
        }
    }

    /// `setpriv` arguments that run a program as nobody, when this process is root; none otherwise.
    private var asServerUser: [String] {
        guard getuid() == 0, let nobody = getpwnam("nobody") else { return [] }
        return ["--reuid=\(nobody.pointee.pw_uid)", "--regid=\(nobody.pointee.pw_gid)", "--clear-groups"]
    }

    /// Runs a server program, as nobody when this process is root.
    private func command(_ program: URL, _ arguments: [String]) -> (URL, [String]) {
        let dropping = asServerUser
        guard !dropping.isEmpty else { return (program, arguments) }
        return (URL(fileURLWithPath: "/usr/bin/setpriv"), dropping + [program.path] + arguments)
    }

    private func launch() async throws {
        if getuid() == 0, let nobody = getpwnam("nobody") {
            guard chown(folder.path, nobody.pointee.pw_uid, nobody.pointee.pw_gid) == 0 else {
                throw PostgresTestServerError("cannot hand \(folder.path) to nobody: \(String(cString: strerror(errno)))")
            }
        }
        // Who started it: a later test process stops the server if this one dies without stopping it.
        try String(getpid()).write(to: folder.file("owner.pid"), atomically: true, encoding: .utf8)
        let data = folder.file("data").path
        let (initdb, initArguments) = command(binaries.initdb, [
            "-D", data, "-U", PostgresTestServer.adminUser, "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "-N",
        ])
        let initialized = try await ProcessRunner.run(initdb, initArguments, timeout: 120)
        guard initialized.status == 0 else {
            throw PostgresTestServerError("initdb failed (\(initialized.status)): \(initialized.output.suffix(800))")
        }
        // Trust for the admin on loopback; a password (scram-sha-256) for the ledger's user.
        let hba = """
            local all all trust
            host all \(PostgresTestServer.user) 127.0.0.1/32 scram-sha-256
            host all \(PostgresTestServer.user) ::1/128 scram-sha-256
            host all all 127.0.0.1/32 trust
            host all all ::1/128 trust

            """
        try hba.write(toFile: data + "/pg_hba.conf", atomically: false, encoding: .utf8)
        try await startServer()
        _ = try await psql("CREATE ROLE \(PostgresTestServer.user) LOGIN CREATEDB PASSWORD '\(PostgresTestServer.password)'")
    }

    /// Starts `postgres` on the data folder and port, and waits until it accepts connections.
    private func startServer() async throws {
        let data = folder.file("data").path
        let log = folder.file("postgres.log")
        let (postgres, arguments) = command(binaries.postgres, [
            "-D", data, "-h", "127.0.0.1", "-p", String(port), "-k", folder.path,
            "-c", "fsync=off", "-c", "max_connections=200", "-c", "shared_buffers=16MB",
        ])
        process = try ProcessRunner.start(postgres, arguments, logFile: log)
        let started = process
        guard await Loopback.waitForListener(port: port, timeout: 60, while: { started?.isRunning == true }) else {
            throw PostgresTestServerError("postgres did not listen on 127.0.0.1:\(port): \((try? String(contentsOf: log, encoding: .utf8))?.suffix(800) ?? "")")
        }
        // Listening comes before accepting ("the database system is starting up"): ask until it answers.
        let deadline = Date().addingTimeInterval(60)
        while true {
            if let answer = try? await psql("SELECT 1"), answer == "1" { break }
            guard Date() < deadline, process?.isRunning == true else {
                throw PostgresTestServerError("postgres did not accept connections: \((try? String(contentsOf: log, encoding: .utf8))?.suffix(800) ?? "")")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Stops the server as an outage would (fast shutdown: every connection ends), keeping its data and port for
    /// ``resume()``.
    public func pause() {
        guard let process else { return }
        self.process = nil
        kill(process.processIdentifier, SIGINT)
        ProcessRunner.stop(process, grace: 20)
    }

    /// Starts the server again after ``pause()``, on the same port with the same data.
    public func resume() async throws {
        guard process == nil else { return }
        try await startServer()
    }

    /// Runs SQL as the admin (`-tA`: bare values, one row a line) and returns what psql printed, trimmed.
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") async throws -> String {
        let result = try await ProcessRunner.run(binaries.psql, [
            "-h", "127.0.0.1", "-p", String(port), "-U", PostgresTestServer.adminUser, "-d", database,
            "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-c", sql,
        ], timeout: 60)
        guard result.status == 0 else { throw PostgresTestServerError("psql: \(sql.prefix(200)): \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Creates a database owned by ``user`` and returns its name.
    public func createDatabase(_ prefix: String = "ledger") async throws -> String {
        let name = "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
        try await psql("CREATE DATABASE \(name) OWNER \(PostgresTestServer.user)")
        return name
    }

    /// The URL of `database` for ``user``, with its password unless `password: false` (then PGPASSWORD or a
    /// password file must give it).
    public func url(database: String, password: Bool = true, scheme: String = "postgres") -> String {
        "\(scheme)://\(PostgresTestServer.user)\(password ? ":\(PostgresTestServer.password)" : "")@127.0.0.1:\(port)/\(database)"
    }

    /// The server's log so far.
    public func log() -> String { (try? String(contentsOf: folder.file("postgres.log"), encoding: .utf8)) ?? "" }

    /// Stops the server (SIGTERM, then SIGKILL after 10 s), reaps it and removes its folder. Idempotent.
    public func stop() {
        if let process {
            self.process = nil
            ProcessRunner.stop(process, grace: 10)
        }
        folder.remove()
    }

    deinit { stop() }

    /// Stops the servers that test processes which died (a crash, a kill) left running, and removes their folders:
    /// a folder `pg-PORT-...` whose `owner.pid` names no live process.
    static func stopOrphans() {
        let base = URL(fileURLWithPath: NSTemporaryDirectory())
        let names = (try? FileManager.default.contentsOfDirectory(atPath: base.path)) ?? []
        for name in names where name.hasPrefix("pg-") {
            let folder = base.appendingPathComponent(name)
            guard let text = try? String(contentsOf: folder.appendingPathComponent("owner.pid"), encoding: .utf8),
                let owner = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), owner != getpid(),
                kill(owner, 0) != 0, errno == ESRCH
            else { continue }
            if let pidFile = try? String(contentsOf: folder.appendingPathComponent("data/postmaster.pid"), encoding: .utf8),
                let line = pidFile.split(separator: "\n").first, let postmaster = pid_t(line), postmaster > 1
            {
                kill(postmaster, SIGTERM)
                for _ in 0..<100 where kill(postmaster, 0) == 0 { usleep(50_000) }
                if kill(postmaster, 0) == 0 { kill(postmaster, SIGKILL) }
            }
            try? FileManager.default.removeItem(at: folder)
        }
    }

    // MARK: - One server shared by the tests of a process

    /// Runs `body` with a fresh database (its URL, with the password) on the server shared by this test process,
    /// started by the first caller and kept until the process exits (then told to shut down fast, SIGINT; a server
    /// a killed test process leaves is stopped by the next one, ``stopOrphans()``). Starting one per test, or again
    /// whenever no test used it, ran `initdb` dozens of times and blocked threads on each stop: with the whole suite
    /// starting at once on two cores, that held up every other test for a minute.
    public static func withDatabase<T>(_ body: (_ url: String, _ server: PostgresTestServer) async throws -> T) async throws -> T {
        let server = try await Shared.instance.acquire()
        do {
            let name = try await server.createDatabase()
            let result = try await body(server.url(database: name), server)
            await Shared.instance.release()
            return result
        } catch {
            await Shared.instance.release()
            throw error
        }
    }

    private actor Shared {
        static let instance = Shared()
        private var server: PostgresTestServer?
        private var starting: Task<PostgresTestServer, any Error>?
        private var users = 0

        func acquire() async throws -> PostgresTestServer {
            users += 1
            if let server { return server }
            let task = starting ?? Task { try await PostgresTestServer() }
            starting = task
            do {
                let started = try await task.value
                server = started
                starting = nil
                if let pid = started.process?.processIdentifier, sharedServerPID == 0 {
                    sharedServerPID = pid
                    atexit { if sharedServerPID > 0 { kill(sharedServerPID, SIGINT) } }
                }
                return started
            } catch {
                starting = nil
                users -= 1
                throw error
            }
        }

        func release() {
            users -= 1
        }
    }
}

public struct PostgresTestServerError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The shared server's process, for the `atexit` handler that shuts it down (a C function pointer captures nothing).
nonisolated(unsafe) private var sharedServerPID: pid_t = 0
