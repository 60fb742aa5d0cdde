import Foundation
import SyncgateTestSupport
import Testing

/// Every config in `Tests/Fixtures/broken-configs/` (syntax errors, wrong types, unknown keys, missing
/// destinations, absurd numbers, alias bombs, cyclic aliases, non-UTF-8, ...) gives exit 78 and a message with
/// file:line:column, and none crashes.
@Suite("broken configs")
struct BrokenConfigTests {
    static let folder = TestPaths.packageRoot.appendingPathComponent("Tests/Fixtures/broken-configs")
    static let files: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".yaml") }.sorted()

    @Test func theCorpusIsThere() {
        #expect(Self.files.count >= 40)
    }

    @Test(arguments: files)
    func exits78WithALocatedMessage(_ name: String) async throws {
        let path = Self.folder.appendingPathComponent(name).path
        let result = try await ProcessRunner.run(SyncgateCLI.binary, ["sync", "--config", path], timeout: 60)
        #expect(result.status == 78, "\(name): exit \(result.status): \(result.stderr)")
        let firstLine = result.stderr.split(separator: "\n").first.map(String.init) ?? ""
        let pattern = "^syncgate: " + NSRegularExpression.escapedPattern(for: path) + ":[0-9]+:[0-9]+: .+"
        #expect(firstLine.range(of: pattern, options: .regularExpression) != nil, "\(name): \(firstLine)")
        #expect(result.stdout.isEmpty)
    }
}
