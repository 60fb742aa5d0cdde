import Foundation
import SyncgateTestSupport
import Testing

/// The progress line a sync draws on a terminal (issue 29: with the share of the bytes done): the built binary under
/// script(1), which gives it a pseudo-terminal. With `--log-format json` there is no progress line: every line on
/// standard error is JSON.
@Suite("Progress line on a terminal (real binary)")
struct ProgressLineTests {
    static let script = "/usr/bin/script"

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: ProgressLineTests.script), "needs script(1) (util-linux)"))
    func percentageOnATerminalAndNoneInJSON() async throws {
        let dir = try TemporaryDirectory("sg-progress")
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: archive, type: local, path: synced}]
            """)
        for i in 0..<20 { try dir.write("outbox/f\(i).txt", String(repeating: "x", count: 100)) }
        func onTerminal(_ arguments: String) async throws -> ProcessResult {
            try await ProcessRunner.run(URL(fileURLWithPath: Self.script), ["-qfec", "'\(SyncgateCLI.binary.path)' \(arguments)", "/dev/null"],
                                        currentDirectory: dir.url)
        }
        let sync = try await onTerminal("sync")
        #expect(sync.status == 0, "\(sync.output)")
        // The last drawing, after the line was cleared: every file, all the bytes.
        let drawings = sync.stdout.components(separatedBy: "\r\u{1B}[2K").dropFirst()
        let last = try #require(drawings.last?.components(separatedBy: "\r").first, "\(sync.stdout)")
        #expect(last.hasPrefix("20/20 files, 100%, 2.0 KiB of 2.0 KiB, "), "\(last)")
        #expect(drawings.allSatisfy { $0.range(of: #"^\d+/\d+ files, \d{1,3}%"#, options: .regularExpression) != nil }, "\(Array(drawings))")

        try dir.write("outbox/new.txt", "new")
        let json = try await onTerminal("sync --log-format json")
        #expect(json.status == 0, "\(json.output)")
        #expect(!json.stdout.contains("\u{1B}[2K") && !json.stdout.contains(" files, "), "\(json.stdout)")
        let lines = json.stdout.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        #expect(!lines.isEmpty && lines.allSatisfy { SyncgateCLI.json($0) != nil }, "\(lines)")
    }
}
