import Foundation
import SyncgateTestSupport
import Testing

/// Config and state paths that are not what they should be: a folder or a FIFO given as the config, a misspelt
/// key, a truncated key file, a state folder that cannot be written. Each ends at once with exit 78 and a message
/// that names the problem.
@Suite("config and state paths (real binary)")
struct ConfigEdgeTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-config-edges")
        cli = SyncgateCLI(dir: dir)
    }

    @Test func aFolderOrAFIFOGivenAsTheConfigIsRefusedAtOnce() async throws {
        defer { dir.remove() }
        try FileManager.default.createDirectory(at: dir.file("conf.d"), withIntermediateDirectories: true)
        var result = try await cli.run(["validate", "--config", "conf.d"], timeout: 20)
        #expect(result.status == 78, "\(result.stderr)")
        #expect(result.stderr.contains("conf.d: is a folder"), "\(result.stderr)")
        #expect(!result.stderr.contains("NSCocoaErrorDomain"))
        #expect(mkfifo(dir.file("fifo.yaml").path, 0o600) == 0)
        // Nobody writes to the FIFO: reading it would wait for ever.
        result = try await cli.run(["validate", "--config", "fifo.yaml"], timeout: 20)
        #expect(result.status == 78, "\(result.stderr)")
        #expect(result.stderr.contains("is not a regular file"), "\(result.stderr)")
    }

    @Test func aMisspeltKeyIsReportedAsUnknownNotAsTheValueItLeftOut() async throws {
        defer { dir.remove() }
        try dir.write("outbox/a.txt", "a")
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: bucket
                type: s3
                endpoint: http://127.0.0.1:9
                bucket: b
                access_key_id: AKIAEXAMPLE
                secret_acces_key: example-secret
            """)
        var cli = self.cli
        cli.environment = ["AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""]
        let result = try await cli.run(["validate"])
        #expect(result.status == 78, "\(result.stderr)")
        #expect(result.stderr.contains("plugins.yaml:9:5: destinations[0].secret_acces_key: unknown key 'secret_acces_key'"), "\(result.stderr)")
    }

    @Test func validateReadsTheKeyFile() async throws {
        defer { dir.remove() }
        try dir.write("outbox/a.csv", "x\n1\n")
        let key = """
            {"type": "service_account", "client_email": "a@b.iam.gserviceaccount.com", "private_key_id": "1",
             "token_uri": "https://oauth2.googleapis.com/token",
             "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\\n-----END PRIVATE KEY-----\\n"}
            """
        try dir.write("key.json", key)
        try dir.write("truncated.json", String(key.prefix(120)))
        for (file, expected) in [("key.json", "private key"), ("truncated.json", "not JSON")] {
            try dir.write("plugins.yaml", """
                version: 1
                sources: [{name: outbox, path: outbox}]
                destinations:
                  - name: tracker
                    type: sheets
                    spreadsheet_id: abc
                    credentials_file: \(file)
                """)
            let result = try await cli.run(["validate"])
            #expect(result.status == 78, "\(file): \(result.stderr)")
            #expect(result.stderr.contains("plugins.yaml:7:23: destinations[0].credentials_file:"), "\(file): \(result.stderr)")
            #expect(result.stderr.lowercased().contains(expected.lowercased()), "\(file): \(result.stderr)")
            #expect(!result.stderr.contains("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"), "the key never appears")
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") && getuid() == 0, "needs root and setpriv"))
    func aStateFolderThatCannotBeWrittenIsAConfigurationError() async throws {
        defer { dir.remove() }
        try dir.write("outbox/a.txt", "a")
        try dir.write("plugins.yaml", """
            version: 1
            state: locked/state.sqlite
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: archive, type: local, path: /tmp/sg-never-written-\(getpid())}]
            """)
        try FileManager.default.createDirectory(at: dir.file("locked"), withIntermediateDirectories: true)
        for (path, mode) in [(dir.path, 0o755), (dir.file("outbox").path, 0o755), (dir.file("outbox/a.txt").path, 0o644),
                             (dir.file("plugins.yaml").path, 0o644), (dir.file("locked").path, 0o555)] {
            #expect(chmod(path, mode_t(mode)) == 0)
        }
        let result = try await cli.run(["sync"], asUser: "65534")  // nobody, by number (its group name differs between systems)
        #expect(result.status == 78, "\(result.stderr)")
        #expect(result.stderr.contains("state's folder must be writable") || result.stderr.contains("cannot be written"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/sg-never-written-\(getpid())"))
    }
}
