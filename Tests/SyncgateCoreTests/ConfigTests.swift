import Foundation
import SyncgateCore
import SyncgateLocal
import Testing

@Suite("plugins.yaml: parsing, defaults and located errors")
struct ConfigTests {
    let registry = PluginRegistry([LocalDestination.registration])

    func parse(_ text: String, env: [String: String] = [:]) throws -> GatewayConfig {
        try GatewayConfig.parse(text: text, file: "plugins.yaml", baseDirectory: URL(fileURLWithPath: "/cfg"), registry: registry, environment: env)
    }

    func error(_ text: String, env: [String: String] = [:]) -> ConfigError? {
        do {
            _ = try parse(text, env: env)
            return nil
        } catch let error as ConfigError {
            return error
        } catch {
            Issue.record("unexpected error type: \(error)")
            return nil
        }
    }

    static let minimal = """
        version: 1
        sources:
          - name: outbox
            path: out
        destinations:
          - name: archive
            type: local
            path: synced
        routes:
          - match: ["**/*"]
            to: [archive]
        """

    @Test func minimalConfigGetsBuiltInDefaults() throws {
        let config = try parse(Self.minimal)
        #expect(config.statePath == "/cfg/.syncgate/state.sqlite")
        #expect(config.sources[0].path == "/cfg/out")
        let settings = try #require(config.destination(named: "archive")).settings
        #expect(settings.retry.file == 1)
        #expect(settings.retry.artwork == 1)
        #expect(settings.retry.baseDelay == .seconds(1))
        #expect(settings.retry.maxDelay == .seconds(20))
        #expect(settings.retry.jitter == .full)
        #expect(settings.concurrency == 4)
        #expect(settings.recentCompleted == .seconds(10))
        #expect(settings.recentFailed == .seconds(60))
        #expect(settings.retry.maxRetryInterval == .seconds(3600))
        #expect(settings.retry.giveUpAfter == .seconds(7 * 86400))
        #expect(config.isArtwork("a/b/cover.PNG") == false)
        #expect(config.isArtwork("a/b/cover.png"))
    }

    @Test func destinationOverridesMergeOverDefaults() throws {
        let config = try parse("""
            version: 1
            sources: [{name: outbox, path: out}]
            defaults:
              concurrency: 2
              retry: { file: 3, artwork: 5, base_delay: 250ms, max_delay: 2m, jitter: none }
              recent: { completed: 30s, failed: 1h }
            destinations:
              - name: a
                type: local
                path: a
                retry: { file: 0 }
              - name: b
                type: local
                path: b
                concurrency: 8
            """)
        let a = try #require(config.destination(named: "a")).settings
        #expect(a.retry.file == 0)
        #expect(a.retry.artwork == 5)
        #expect(a.retry.baseDelay == .milliseconds(250))
        #expect(a.retry.maxDelay == .seconds(120))
        #expect(a.retry.jitter == RetrySettings.Jitter.none)
        #expect(a.concurrency == 2)
        #expect(a.recentFailed == .seconds(3600))
        let b = try #require(config.destination(named: "b")).settings
        #expect(b.concurrency == 8)
        #expect(b.retry.file == 3)
        // No routes: every file goes to every destination.
        #expect(config.destinations(forSource: "outbox", relativePath: "x/y.txt") == ["a", "b"])
    }

    /// One local destination with one more line under it.
    static func localDestination(_ line: String) -> String {
        """
        version: 1
        sources: [{name: outbox, path: out}]
        destinations:
          - name: archive
            type: local
            path: synced
            \(line)
        """
    }

    @Test(arguments: [("", LocalFsync.batch), ("fsync: batch", .batch), ("fsync: file", .file), ("fsync: true", .file),
                      ("fsync: false", .off)])
    func localFsyncModes(_ line: String, _ mode: LocalFsync) throws {
        let config = try parse(Self.localDestination(line))
        #expect((config.destinations.first?.destination as? LocalDestination)?.fsync == mode)
    }

    @Test func unknownFsyncModeNamesItsLineAndTheChoices() {
        let e = error(Self.localDestination("fsync: sometimes"))
        #expect(e?.description == "plugins.yaml:7:12: destinations[0].fsync: must be batch, file (or true) or false")
    }

    @Test func negativeRetryCountNamesFileLineColumnAndKey() {
        let e = error("""
            version: 1
            sources: [{name: outbox, path: out}]
            destinations:
              - name: archive
                type: local
                path: synced
              - name: second
                type: local
                path: other
                retry:
                  file: -1
            """)
        #expect(e?.description == "plugins.yaml:11:13: destinations[1].retry.file: must be >= 0")
    }

    @Test func unknownTypeListsKnownTypes() {
        let e = error("""
            version: 1
            sources: [{name: outbox, path: out}]
            destinations:
              - name: car
                type: hedunit
            """)
        #expect(e?.line == 5)
        #expect(e?.column == 11)
        #expect(e?.keyPath == "destinations[0].type")
        #expect(e?.message.contains("unknown destination type 'hedunit'") == true)
        #expect(e?.message.contains("local") == true)
    }

    @Test func unknownKeysAreReportedWhereverTheyAre() {
        let top = error(Self.minimal + "\nextra: 1\n")
        #expect(top?.keyPath == "extra")
        #expect(top?.line == 12)
        #expect(top?.message == "unknown key 'extra'")

        let plugin = error(Self.minimal.replacingOccurrences(of: "    path: synced", with: "    path: synced\n    pth: x"))
        #expect(plugin?.keyPath == "destinations[0].pth")
        #expect(plugin?.line == 9)

        let nested = error(Self.minimal.replacingOccurrences(of: "    path: synced", with: "    path: synced\n    retry: { files: 2 }"))
        #expect(nested?.keyPath == "destinations[0].retry.files")
    }

    @Test func routeToMissingDestination() {
        let e = error(Self.minimal.replacingOccurrences(of: "to: [archive]", with: "to: [archive, bucket]"))
        #expect(e?.keyPath == "routes[0].to[1]")
        #expect(e?.line == 11)
        #expect(e?.message.contains("no destination named 'bucket'") == true)
    }

    @Test func badDurationGlobAndJitter() {
        let duration = error(Self.minimal.replacingOccurrences(of: "    path: synced", with: "    path: synced\n    retry: { base_delay: soon }"))
        #expect(duration?.keyPath == "destinations[0].retry.base_delay")
        #expect(duration?.message.contains("not a duration") == true)

        let glob = error(Self.minimal.replacingOccurrences(of: "match: [\"**/*\"]", with: "match: [\"**/*\", \"[abc\"]"))
        #expect(glob?.keyPath == "routes[0].match[1]")
        #expect(glob?.message.contains("unclosed '['") == true)

        let jitter = error(Self.minimal.replacingOccurrences(of: "    path: synced", with: "    path: synced\n    retry: { jitter: lots }"))
        #expect(jitter?.keyPath == "destinations[0].retry.jitter")
    }

    @Test func wrongTypesAndMissingKeys() {
        let wrongType = error(Self.minimal.replacingOccurrences(of: "    path: synced", with: "    path: synced\n    concurrency: many"))
        #expect(wrongType?.keyPath == "destinations[0].concurrency")
        #expect(wrongType?.message.contains("expected a whole number") == true)

        let zero = error(Self.minimal.replacingOccurrences(of: "    path: synced", with: "    path: synced\n    concurrency: 0"))
        #expect(zero?.keyPath == "destinations[0].concurrency")

        let missing = error(Self.minimal.replacingOccurrences(of: "    path: synced\n", with: ""))
        #expect(missing?.keyPath == "destinations[0].path")
        #expect(missing?.message == "missing required key 'path'")

        let version = error(Self.minimal.replacingOccurrences(of: "version: 1", with: "version: 2"))
        #expect(version?.keyPath == "version")
        #expect(version?.line == 1)
    }

    @Test func environmentVariablesExpandAndUnsetOnesAreErrors() throws {
        let text = Self.minimal.replacingOccurrences(of: "path: synced", with: "path: ${OUT_DIR}/x")
        let config = try parse(text, env: ["OUT_DIR": "/data"])
        let local = try #require(config.destination(named: "archive")?.destination as? LocalDestination)
        #expect(local.root == "/data/x")

        let e = error(text)
        #expect(e?.keyPath == "destinations[0].path")
        #expect(e?.message == "environment variable OUT_DIR is not set")
        #expect(e?.line == 8)
    }

    @Test func yamlSyntaxAndDuplicateKeys() {
        let syntax = error("version: 1\nsources:\n  - name: [unclosed\n")
        #expect(syntax?.line != nil)
        #expect(syntax?.message.hasPrefix("YAML syntax") == true)

        let duplicate = error("version: 1\nversion: 1\n")
        #expect(duplicate?.message.contains("duplicate key 'version'") == true)
    }

    @Test func aliasBombIsRefusedNotExpanded() {
        var text = "version: 1\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        for i in 1...9 { text += "a\(i): &a\(i) [" + Array(repeating: "*a\(i - 1)", count: 10).joined(separator: ", ") + "]\n" }
        text += Self.minimal.replacingOccurrences(of: "version: 1\n", with: "").replacingOccurrences(of: "    path: synced", with: "    path: synced\n    bomb: *a9")
        let e = error(text)
        #expect(e != nil)
    }

    @Test func nonUTF8FileIsLocated() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sg-cfg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("plugins.yaml")
        var data = Data("version: 1\nsources:\n  - name: caf".utf8)
        data.append(0xE9)
        data.append(contentsOf: Array("\n".utf8))
        try data.write(to: file)
        do {
            _ = try GatewayConfig.load(path: file.path, registry: registry)
            Issue.record("expected an error")
        } catch let error as ConfigError {
            #expect(error.line == 3)
            #expect(error.column == 14)
            #expect(error.message == "not valid UTF-8 text")
        }
    }

    @Test func durationsAndSizes() {
        #expect(ConfigDuration.parse("250ms")?.duration == .milliseconds(250))
        #expect(ConfigDuration.parse("1.5s")?.duration == .milliseconds(1500))
        #expect(ConfigDuration.parse("5m")?.duration == .seconds(300))
        #expect(ConfigDuration.parse("2h")?.duration == .seconds(7200))
        #expect(ConfigDuration.parse("7d")?.duration == .seconds(7 * 86400))
        #expect(ConfigDuration.parse("-1s") == nil)
        #expect(ConfigDuration.parse("1 fortnight") == nil)
        #expect(ByteSize.parse("16MiB")?.bytes == 16 << 20)
        #expect(ByteSize.parse("8MB")?.bytes == 8_000_000)
        #expect(ByteSize.parse("512")?.bytes == 512)
        #expect(ByteSize.parse("lots") == nil)
    }

    @Test func secretsPrintRedactedAndAreScrubbed() {
        let secret = Secret("s3cr3t-value-123")
        #expect("\(secret)" == "<redacted>")
        #expect(Redactor.shared.redact("auth failed for s3cr3t-value-123!") == "auth failed for <redacted>!")
    }
}
