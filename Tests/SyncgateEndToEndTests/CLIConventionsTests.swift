import Foundation
import SyncgateTestSupport
import Testing

/// The conventions of the tools syncgate is deployed beside (issue 17): global options before or after the
/// command, every config error in one run, `${VAR:-default}` / `${VAR:?message}`, secrets from `KEY_file`,
/// `--version` with the commit, completion scripts. Each runs the built binary.
@Suite("CLI conventions (real binary)")
struct CLIConventionsTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-cli-conventions")
        cli = SyncgateCLI(dir: dir)
    }

    static let config = """
        version: 1
        sources: [{name: outbox, path: outbox}]
        destinations:
          - name: archive
            type: local
            path: synced
        """

    @Test func globalOptionsWorkBeforeAndAfterTheCommand() async throws {
        defer { dir.remove() }
        try dir.write("outbox/a.txt", "a")
        try dir.write("conf/x.yaml", Self.config.replacingOccurrences(of: "path: outbox", with: "path: ../outbox"))
        for arguments in [
            ["--config", "conf/x.yaml", "validate"], ["validate", "--config", "conf/x.yaml"], ["--config=conf/x.yaml", "validate"],
            ["-v", "--log-format", "json", "--config", "conf/x.yaml", "validate"], ["--log-format", "plain", "--config", "conf/x.yaml", "validate", "-v"],
        ] {
            let result = try await cli.run(arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(result.stdout.hasPrefix("conf/x.yaml: OK"), "\(arguments): \(result.stdout)")
        }
        // --quiet before the command reaches it: validate then prints nothing (the exit status says it).
        let quiet = try await cli.run(["--quiet", "--config", "conf/x.yaml", "validate"])
        #expect(quiet.status == 0 && quiet.stdout.isEmpty, "\(quiet.stdout)\(quiet.stderr)")
        // A real pass, with the options first: the file reaches the folder next to the config.
        let sync = try await cli.run(["--config", "conf/x.yaml", "--log-format=json", "sync", "--json"])
        #expect(sync.status == 0, "\(sync.stderr)")
        #expect(dir.exists("conf/synced/a.txt"))
        let status = try await cli.run(["--config", "conf/x.yaml", "status", "--json"])
        #expect(SyncgateCLI.json(status.stdout)?["destinations"] != nil, "\(status.stdout)")
        // The nested command takes them after its full name; `--` still ends the options.
        let check = try await cli.run(["-v", "plugin", "check", "--", "/nonexistent/plugin"])
        #expect(check.status == 64, "\(check.stderr)")
        // An option before a word that is not a command is left for the parser to refuse.
        let unknown = try await cli.run(["--config", "conf/x.yaml", "nosuch"])
        #expect(unknown.status == 64, "\(unknown.stderr)")
    }

    @Test func helpAndVersionStillWorkAndVersionNamesTheBuild() async throws {
        defer { dir.remove() }
        let help = try await cli.run(["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("SUBCOMMANDS") && help.stdout.contains("validate") && help.stdout.contains("migrate"), "\(help.stdout)")
        let subHelp = try await cli.run(["--config", "x.yaml", "sync", "--help"])
        #expect(subHelp.status == 0)
        #expect(subHelp.stdout.contains("--dry-run"), "\(subHelp.stdout)")
        let version = try await cli.run(["--version"])
        #expect(version.status == 0)
        let line = version.stdout.trimmingCharacters(in: .newlines)
        let pattern = #"^syncgate [0-9]+\.[0-9]+\.[0-9]+ \((commit [0-9a-f]{7,40}(-dirty)?(, built [0-9]{4}-[0-9]{2}-[0-9]{2})?|commit unknown)\)$"#
        #expect(line.range(of: pattern, options: .regularExpression) != nil, "\(line)")
    }

    @Test func completionScriptsAreGeneratedForEveryShell() async throws {
        defer { dir.remove() }
        for shell in ["bash", "zsh", "fish"] {
            let result = try await cli.run(["--generate-completion-script", shell])
            #expect(result.status == 0, "\(shell): \(result.stderr)")
            // fish's script names options without their dashes (`'config='`).
            let options = shell == "fish" ? ["'config='", "'log-format='"] : ["--config", "--log-format"]
            for word in ["syncgate", "validate", "retry", "migrate"] + options {
                #expect(result.stdout.contains(word), "\(shell) completion lacks \(word)")
            }
        }
    }

    @Test func validateListsEveryErrorOfTheConfigInOneRun() async throws {
        defer { dir.remove() }
        try dir.write("outbox/a.txt", "a")
        try dir.write("plugins.yaml", """
            version: 1
            sources:
              - name: outbox
                path: outbox
                optional: perhaps
            destinations:
              - name: archive
                type: local
                path: synced
                concurrency: 0
              - name: bucket
                type: nosuch
            routes:
              - to: [archive, nowhere]
            """)
        for command in ["validate", "sync", "status"] {
            let result = try await cli.run([command])
            #expect(result.status == 78, "\(command): \(result.stderr)")
            let lines = result.stderr.split(separator: "\n").map(String.init)
            // (The unknown type's message goes on with where it looked for a program of that name.)
            let unknownType = "syncgate: plugins.yaml:12:11: destinations[1].type: unknown destination type 'nosuch' (known: exec, headunit, local, s3, sheets; "
            #expect(lines.map { $0.hasPrefix(unknownType) ? unknownType : $0 } == [
                "syncgate: plugins.yaml:5:15: sources[0].optional: expected true or false, found 'perhaps'",
                "syncgate: plugins.yaml:10:18: destinations[0].concurrency: must be between 1 and 256",
                unknownType,
                "syncgate: plugins.yaml:14:19: routes[0].to[1]: no destination named 'nowhere' (known: archive, bucket)",
                "syncgate: 4 errors in plugins.yaml",
            ], "\(command): \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
    }

    @Test func variablesWithDefaultsAndRequiredOnes() async throws {
        defer { dir.remove() }
        try dir.write("outbox/a.txt", "a")
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: "${OUTBOX:-outbox}"}]
            destinations:
              - name: archive
                type: local
                path: ${ARCHIVE:?set ARCHIVE to the folder files are copied to}
            """)
        let missing = try await cli.run(["sync"])
        #expect(missing.status == 78)
        #expect(missing.stderr == "syncgate: plugins.yaml:6:11: destinations[0].path: environment variable ARCHIVE is not set: set ARCHIVE to the folder files are copied to\n")
        var set = cli
        set.environment = ["ARCHIVE": "from-env"]
        let sync = try await set.run(["sync"])
        #expect(sync.status == 0, "\(sync.stderr)")
        #expect(dir.exists("from-env/a.txt"))
    }

    @Test func secretsFromFilesAreReadNamedWhenMissingAndNeverShown() async throws {
        defer { dir.remove() }
        try dir.write("outbox/a.txt", "a")
        let keyID = "AKIDFILE\(UUID().uuidString.prefix(8))"
        let secret = "SecretFromFile/\(UUID().uuidString)"
        try dir.write("run/secrets/key_id", keyID + "\n")
        try dir.write("run/secrets/secret", secret + "\n")
        func write(_ credentials: String) throws {
            try dir.write("plugins.yaml", """
                version: 1
                sources: [{name: outbox, path: outbox}]
                destinations:
                  - name: bucket
                    type: s3
                    endpoint: http://127.0.0.1:1
                    bucket: b
                    region: us-east-1
                \(credentials)
                """)
        }
        try write("""
                access_key_id_file: run/secrets/key_id
                secret_access_key_file: \(dir.path)/run/secrets/secret
            """)
        let validate = try await cli.run(["validate", "-vv"])
        #expect(validate.status == 0, "\(validate.stderr)")
        // Nothing listens on port 1: the destination is unavailable, and no output holds the secrets.
        let sync = try await cli.run(["sync", "--json", "-vv"])
        #expect(sync.status == 75, "\(sync.stderr)")
        for text in [validate.stdout, validate.stderr, sync.stdout, sync.stderr] {
            #expect(!text.contains(secret) && !text.contains(keyID))
        }

        try write("""
                access_key_id_file: run/secrets/key_id
                secret_access_key: \(secret)
                secret_access_key_file: run/secrets/nothere
            """)
        let errors = try await cli.run(["validate"])
        #expect(errors.status == 78)
        #expect(errors.stderr.contains("syncgate: plugins.yaml:11:29: destinations[0].secret_access_key_file: the secret file \(dir.path)/run/secrets/nothere does not exist"), "\(errors.stderr)")
        #expect(!errors.stderr.contains(secret))

        try write("""
                access_key_id_file: run/secrets/key_id
                secret_access_key: ${S3_SECRET}
                secret_access_key_file: run/secrets/secret
            """)
        var withEnv = cli
        withEnv.environment = ["S3_SECRET": secret]
        let both = try await withEnv.run(["validate"])
        #expect(both.status == 78)
        #expect(both.stderr == "syncgate: plugins.yaml:11:29: destinations[0].secret_access_key_file: set secret_access_key or secret_access_key_file, not both\n")
    }
}
