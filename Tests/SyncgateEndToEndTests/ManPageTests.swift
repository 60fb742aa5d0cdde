import Foundation
import SyncgateTestSupport
import Testing

/// `scripts/man-sections` (issue 29): the page generate-manual writes gets syncgate's real EXIT STATUS and an
/// ENVIRONMENT, FILES and EXAMPLES section, in mdoc's order, and still renders without a warning (groff -ww).
@Suite("Man page sections")
struct ManPageTests {
    static let script = TestPaths.packageRoot.appendingPathComponent("scripts/man-sections")
    static let groff = "/usr/bin/groff"
    static let generator = TestPaths.executable("generate-manual")

    /// A page as generate-manual writes it (its sections, its generic exit status), or the real one when the
    /// generator is built (`swift build --product generate-manual`).
    func page(in dir: TemporaryDirectory) async throws -> URL {
        if FileManager.default.isExecutableFile(atPath: Self.generator.path) {
            let result = try await ProcessRunner.run(Self.generator, [SyncgateCLI.binary.path, "--output-directory", dir.path + "/man"])
            try #require(result.status == 0, "\(result.output)")
            return dir.file("man/syncgate.1")
        }
        return try dir.write("syncgate.1", """
            .Dd November 28, 2026
            .Dt SYNCGATE 1
            .Os
            .Sh NAME
            .Nm syncgate
            .Nd "Deliver files from local folders"
            .Sh SYNOPSIS
            .Nm
            .Ar subcommand
            .Sh DESCRIPTION
            Exit codes: see below.
            .Sh "EXIT STATUS"
            .Ex -std
            .Sh "SEE ALSO"
            .Xr syncgate.sync 1
            .Sh AUTHORS
            The syncgate authors.

            """)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: ManPageTests.groff), "needs groff"))
    func realExitStatusEnvironmentFilesAndExamples() async throws {
        let dir = try TemporaryDirectory("sg-man")
        defer { dir.remove() }
        let page = try await page(in: dir)
        let done = try await ProcessRunner.run(Self.script, [page.path])
        #expect(done.status == 0, "\(done.output)")
        // Twice is once: the sections are not added again.
        let again = try await ProcessRunner.run(Self.script, [page.path])
        #expect(again.status == 0)
        let source = try String(contentsOf: page, encoding: .utf8)
        #expect(source.components(separatedBy: ".Sh ENVIRONMENT").count == 2)
        #expect(!source.contains(".Ex -std"), "the generic exit status is gone")

        let lint = try await ProcessRunner.run(URL(fileURLWithPath: Self.groff), ["-mandoc", "-Tutf8", "-ww", "-z", page.path])
        #expect(lint.status == 0 && lint.stderr.isEmpty, "\(lint.stderr)")
        let text = try await ProcessRunner.run(URL(fileURLWithPath: Self.groff), ["-mandoc", "-Tascii", "-P", "-c", "-P", "-b", "-P", "-u", page.path])
        let lines = text.stdout.split(separator: "\n").map(String.init)
        let headings = lines.filter { !$0.isEmpty && !$0.hasPrefix(" ") && $0 == $0.uppercased() && !$0.contains("(1)") }
        let order = ["ENVIRONMENT", "FILES", "EXIT STATUS", "EXAMPLES"]
        #expect(order.allSatisfy(headings.contains), "\(headings)")
        #expect(order.compactMap { headings.firstIndex(of: $0) } == order.compactMap { headings.firstIndex(of: $0) }.sorted(), "\(headings)")
        #expect(headings.firstIndex(of: "DESCRIPTION")! < headings.firstIndex(of: "ENVIRONMENT")!)
        // Every code syncgate exits with, each with its meaning.
        for code in ["0", "1", "64", "75", "78", "130", "141"] {
            #expect(lines.contains { $0.trimmingCharacters(in: .whitespaces).hasPrefix(code + " ") }, "exit code \(code): \(text.stdout)")
        }
        for name in ["SYNCGATE_CONFIG", "SYNCGATE_LOG_LEVEL", "XDG_CONFIG_HOME", "STATE_DIRECTORY", "/etc/syncgate/plugins.yaml",
                     "/var/lib/syncgate/state.sqlite", "syncgate validate && syncgate sync"] {
            #expect(text.stdout.contains(name), "\(name)")
        }
        // A page that is not generate-manual's is refused, untouched.
        let other = try dir.write("other.1", ".Dd x\n.Sh NAME\n")
        let refused = try await ProcessRunner.run(Self.script, [other.path])
        #expect(refused.status == 1)
        #expect(try String(contentsOf: other, encoding: .utf8) == ".Dd x\n.Sh NAME\n")
    }
}
