import Foundation
import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport
import Testing

@Suite("Config: every error at once, ${VAR:?message} and secrets from files")
struct ConfigAllErrorsTests {
    let registry = PluginRegistry([LocalDestination.registration])

    func errors(_ text: String, env: [String: String] = [:], base: String = "/cfg") -> [ConfigError] {
        do {
            _ = try GatewayConfig.parse(text: text, file: "plugins.yaml", baseDirectory: URL(fileURLWithPath: base), registry: registry, environment: env)
            Issue.record("the config was accepted")
            return []
        } catch let error as ConfigError {
            return error.all
        } catch {
            Issue.record("unexpected error type: \(error)")
            return []
        }
    }

    @Test func everyItemsMistakeIsReportedWithItsLineAndKey() {
        let found = errors("""
            version: 1
            sources:
              - name: outbox
                path: out
                follow_symlinks: maybe
              - name: inbox
                path: in
                colour: blue
            defaults:
              concurrency: 0
            destinations:
              - name: a
                type: local
                path: synced
                retry: { file: -1 }
              - name: b
                type: nosuch
              - name: c
                type: local
              - name: d
                type: local
                path: d
                fsync: sometimes
            routes:
              - match: ["**/*"]
                to: [a, zz]
              - to: [b]
                sources: [outbox, nothere]
            """)
        let described = found.map(\.description)
        #expect(described == [
            "plugins.yaml:5:22: sources[0].follow_symlinks: expected true or false, found 'maybe'",
            "plugins.yaml:8:5: sources[1].colour: unknown key 'colour'",
            "plugins.yaml:10:16: defaults.concurrency: must be between 1 and 256",
            "plugins.yaml:15:20: destinations[0].retry.file: must be >= 0",
            "plugins.yaml:17:11: destinations[1].type: unknown destination type 'nosuch' (known: local)",
            "plugins.yaml:18:5: destinations[2].path: missing required key 'path'",
            "plugins.yaml:23:12: destinations[3].fsync: must be batch, file (or true) or false",
            "plugins.yaml:26:13: routes[0].to[1]: no destination named 'zz' (known: a, b, c, d)",
            "plugins.yaml:28:23: routes[1].sources[1]: no source named 'nothere'",
        ], "\(described.joined(separator: "\n"))")
        #expect(found.allSatisfy { $0.file == "plugins.yaml" && $0.line != nil && !$0.keyPath.isEmpty })
    }

    @Test func aSingleErrorStaysASingleErrorAndTheFirstIsTheThrownOne() throws {
        let found = errors("""
            version: 1
            sources:
              - name: outbox
                path: out
            destinations:
              - name: a
                type: local
                path: synced
                concurency: 2
            """)
        #expect(found.map(\.description) == ["plugins.yaml:9:5: destinations[0].concurency: unknown key 'concurency'; did you mean 'concurrency'?"])
    }

    @Test func missingTopLevelKeysAreAllReported() {
        let found = errors("state: x.sqlite\n")
        #expect(found.map(\.keyPath) == ["version", "sources", "destinations"], "\(found)")
    }

    @Test func aSyntaxErrorStopsAtOnce() {
        let found = errors("version: 1\nsources:\n  - name: [unclosed\ndestinations: 3\n")
        #expect(found.count == 1)
        #expect(found.first?.message.hasPrefix("YAML syntax") == true)
    }

    @Test func requiredVariableMessagesAndDefaultsInAConfig() throws {
        let text = """
            version: 1
            sources:
              - name: outbox
                path: ${OUTBOX:-out}
            destinations:
              - name: a
                type: local
                path: ${ARCHIVE:?set ARCHIVE to the archive folder}
            """
        let found = errors(text)
        #expect(found.map(\.description) == [
            "plugins.yaml:8:11: destinations[0].path: environment variable ARCHIVE is not set: set ARCHIVE to the archive folder"
        ])
        let config = try GatewayConfig.parse(text: text, file: "plugins.yaml", baseDirectory: URL(fileURLWithPath: "/cfg"), registry: registry,
                                             environment: ["ARCHIVE": "/srv/archive"])
        #expect(config.sources[0].path == "/cfg/out")
        let local = try #require(config.destination(named: "a")?.destination as? LocalDestination)
        #expect(local.root == "/srv/archive")
    }

    static let withHTTP = """
        version: 1
        sources:
          - name: outbox
            path: out
        destinations:
          - name: a
            type: local
            path: synced
        http:
          listen: 0.0.0.0:9464

        """

    @Test func aSecretFileIsReadTrimmedAndRedacted() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let token = "file-token-\(UUID().uuidString)"
        _ = try dir.write("secrets/token", token + "\n")
        let config = try GatewayConfig.parse(text: Self.withHTTP + "  token_file: secrets/token\n", file: "plugins.yaml",
                                             baseDirectory: dir.url, registry: registry, environment: [:])
        #expect(config.http?.token?.reveal() == token)
        #expect(Redactor.shared.redact("auth \(token) failed") == "auth <redacted> failed")
    }

    @Test func secretFileMistakesNameTheFileNeverTheSecret() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let token = "both-token-\(UUID().uuidString)"
        _ = try dir.write("token", token)
        _ = try dir.write("empty", "\n")
        _ = try dir.write("big", String(repeating: "x", count: 70_000))

        let both = errors(Self.withHTTP + "  token: \(token)\n  token_file: token\n", base: dir.path)
        #expect(both.map(\.description) == ["plugins.yaml:12:15: http.token_file: set token or token_file, not both"])

        let missing = errors(Self.withHTTP + "  token_file: nothere\n", base: dir.path)
        #expect(missing.map(\.description) == ["plugins.yaml:11:15: http.token_file: the secret file \(dir.path)/nothere does not exist"])

        let empty = errors(Self.withHTTP + "  token_file: empty\n", base: dir.path)
        #expect(empty.map(\.message) == ["the secret file \(dir.path)/empty is empty"])

        let folder = errors(Self.withHTTP + "  token_file: \(dir.path)\n", base: dir.path)
        #expect(folder.map(\.message) == ["the secret file \(dir.path) is a folder"])

        let big = errors(Self.withHTTP + "  token_file: big\n", base: dir.path)
        #expect(big.map(\.message) == ["the secret file \(dir.path)/big is larger than 64 KiB; not a secret?"])

        for error in both + missing + empty + folder + big {
            #expect(!error.description.contains(token))
        }
    }

    /// `listen` is judged loopback or not by the addresses it resolves to (issue 26): a name spelled like a loopback
    /// address needs a token like any other; `localhost` does not. `max_connections` is bounded.
    @Test func theListenAddressIsJudgedByWhatItResolvesTo() throws {
        let base = Self.withHTTP.replacingOccurrences(of: "0.0.0.0:9464", with: "127.gateway.test:9464")
        let named = errors(base)
        #expect(named.map(\.message).count == 1)
        #expect(named.first?.message.contains("needs a token") == true, "\(named)")
        for listen in ["localhost:9464", "127.0.0.1:9464", "127.3.2.1:9464", "\"[::1]:9464\""] {
            let config = try GatewayConfig.parse(text: Self.withHTTP.replacingOccurrences(of: "0.0.0.0:9464", with: listen), file: "plugins.yaml",
                                                 baseDirectory: URL(fileURLWithPath: "/cfg"), registry: registry, environment: [:])
            #expect(config.http?.isLoopback == true, "\(listen)")
            #expect(config.http?.maxConnections == HTTPSettings.defaultMaxConnections)
        }
        let loopback = Self.withHTTP.replacingOccurrences(of: "0.0.0.0:9464", with: "127.0.0.1:9464")
        let config = try GatewayConfig.parse(text: loopback + "  max_connections: 64\n", file: "plugins.yaml",
                                             baseDirectory: URL(fileURLWithPath: "/cfg"), registry: registry, environment: [:])
        #expect(config.http?.maxConnections == 64)
        #expect(errors(loopback + "  max_connections: 2\n").map(\.description) == [
            "plugins.yaml:11:20: http.max_connections: must be between 8 and 16384 (default 256)"
        ])
    }
}
