import Foundation

/// The chosen files of a gateway's pass (those its watches saw settle), looked up one by one instead of walking
/// whole sources: a source's files in the byte order of their paths, then its end. A file that is no longer there,
/// or that its source does not select, is left out (nothing is done about it, as a walk would not have found it).
final class PathWalk: FileWalk {
    private var items: [ScanPipeline.Item]
    private var index = 0

    init(sources: [SourceConfig], paths: [FileKey]) {
        var bySource: [String: [String]] = [:]
        for key in paths { bySource[key.source, default: []].append(key.path) }
        var items: [ScanPipeline.Item] = []
        let scanner = SourceScanner()
        for source in sources {
            guard let chosen = bySource[source.name] else { continue }
            let files = Set(chosen).sorted { ExactString.compare($0, $1) < 0 }.compactMap { scanner.file(at: $0, in: source) }
            if !files.isEmpty { items.append(.files(files)) }
            items.append(.finished(source: source.name, warnings: []))
        }
        self.items = items
    }

    func next() -> ScanPipeline.Item? {
        guard index < items.count else { return nil }
        defer { index += 1 }
        return items[index]
    }

    func stop() { index = items.count }
}
