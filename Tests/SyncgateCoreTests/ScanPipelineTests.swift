import Foundation
@testable import SyncgateCore
import SyncgateTestSupport
import Testing

/// The sync walks its sources on a thread of its own (``ScanPipeline``), ahead of the planning: the files must come
/// out exactly as a walk on the spot finds them, source after source, with each source's warnings after its files.
@Suite("scan pipeline")
struct ScanPipelineTests {
    func sources(_ dir: TemporaryDirectory) throws -> [SourceConfig] {
        for index in 0..<57 { try dir.write(String(format: "one/d%d/f%03d.txt", index % 4, index), "\(index)") }
        try dir.write("one/a.txt", "a")
        try dir.write("one/a/b.txt", "b")
        #expect(mkfifo(dir.file("one/pipe").path, 0o644) == 0)
        for index in 0..<5 { try dir.write("two/x\(index).bin", "\(index)") }
        let all = try GlobSet(patterns: ["**/*"])
        return [
            SourceConfig(name: "one", path: dir.file("one").path, include: all, exclude: try GlobSet(patterns: [])),
            SourceConfig(name: "two", path: dir.file("two").path, include: all, exclude: try GlobSet(patterns: [])),
            SourceConfig(name: "three", path: dir.file("missing").path, include: all, exclude: try GlobSet(patterns: [])),
        ]
    }

    @Test func yieldsWhatAWalkOnTheSpotFinds() throws {
        let dir = try TemporaryDirectory("sg-pipeline")
        defer { dir.remove() }
        let sources = try sources(dir)
        var expected: [String] = []
        for source in sources {
            let (files, warnings) = SourceScanner().scan(source)
            expected += files.map { "\($0.source):\($0.relativePath):\($0.size)" }
            expected += warnings.map { "warning \($0)" }
            expected.append("end \(source.name)")
        }
        // Chunks of 5 with room for 2: the walk waits for the consumer many times over.
        let pipeline = ScanPipeline(sources: sources, chunkSize: 5, capacity: 2)
        defer { pipeline.stop() }
        var got: [String] = []
        while let item = pipeline.next() {
            switch item {
            case .files(let files):
                #expect(files.count <= 5)
                got += files.map { "\($0.source):\($0.relativePath):\($0.size)" }
            case .finished(let source, let warnings):
                got += warnings.map { "warning \($0)" }
                got.append("end \(source)")
            }
        }
        #expect(got == expected)
        #expect(got.contains("one:a.txt:1") && got.contains("end three"))
        #expect(got.contains { $0.hasPrefix("warning one: pipe") })
        #expect(pipeline.next().map { _ in true } == nil)
    }

    @Test func stoppingEarlyEndsTheWalk() throws {
        let dir = try TemporaryDirectory("sg-pipeline")
        defer { dir.remove() }
        let pipeline = ScanPipeline(sources: try sources(dir), chunkSize: 3, capacity: 1)
        guard case .files(let first)? = pipeline.next() else {
            Issue.record("the walk found no files")
            return
        }
        #expect(first.count == 3)
        pipeline.stop()  // returns only once the walk's thread has let go
        #expect(pipeline.next().map { _ in true } == nil)
    }
}
