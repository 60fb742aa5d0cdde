import Foundation
import SyncgateTestSupport
import Testing

/// Issue 32: every setting a plugin's `configure` refuses is a config error of its own in `syncgate validate`, each
/// at its line (not only the first one).
@Suite("plugin settings refused at configure (real binary)")
struct PluginSettingsErrorsTests {
    @Test func validateShowsEverySettingThePluginRefusesAtItsLine() async throws {
        let dir = try TemporaryDirectory("sg-plugin-settings")
        defer { dir.remove() }
        let cli = SyncgateCLI(dir: dir)
        try dir.write("outbox/a.txt", "a")
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: hook
                type: exec
                command: ["\(ExecPluginTests.webhookPlugin)"]
                settings:
                  url: ftp://127.0.0.1/in
                  timeout: "-1"
            """)
        let validate = try await cli.run(["validate"])
        #expect(validate.status == 78, "\(validate.stderr)")
        #expect(validate.stderr.contains("plugins.yaml:8:12: destinations[0].settings.url: must be an http:// or https:// URL"), "\(validate.stderr)")
        #expect(validate.stderr.contains("plugins.yaml:9:16: destinations[0].settings.timeout: must be a number of seconds > 0"), "\(validate.stderr)")
    }
}
