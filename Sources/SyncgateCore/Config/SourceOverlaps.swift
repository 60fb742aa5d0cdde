import Foundation

/// Sources whose folders overlap: the same folder (also through a link or a bind mount), or one inside another.
/// A file there is one physical file reached by several sources, so a move waits for all of them. Decided on the
/// folders as they are on disk (each resolved with `realpath`, and compared by device and inode, its own and its
/// parents'); a folder that is missing overlaps nothing.
public struct SourceOverlaps: Sendable {
    /// Another source that reaches some of a source's files.
    public struct Overlap: Sendable, Hashable {
        /// Where the other source's folder is.
        public enum Place: Sendable, Hashable {
            /// The same folder.
            case same
            /// At this relative path inside the source's folder.
            case inside(String)
            /// The source's folder is at this relative path inside the other's.
            case around(String)
        }

        public var other: String
        public var place: Place

        /// A path relative to the source as the other source names it; nil when the other does not reach it.
        public func path(inOther relativePath: String) -> String? {
            switch place {
            case .same: return relativePath
            case .inside(let offset):
                guard relativePath.hasPrefix(offset + "/") else { return nil }
                return String(relativePath.dropFirst(offset.count + 1))
            case .around(let offset): return offset + "/" + relativePath
            }
        }
    }

    /// A pair of overlapping sources, for `syncgate validate`: `outer` holds `inner` (`offset` empty when they are
    /// the same folder).
    public struct Pair: Sendable, Hashable {
        public var outer: String, inner: String
        public var offset: String
    }

    /// Per source, the others overlapping it.
    public let bySource: [String: [Overlap]]
    /// Each overlapping pair once, in config order.
    public let pairs: [Pair]

    public var isEmpty: Bool { pairs.isEmpty }

    public init(sources: [SourceConfig]) {
        let roots = sources.compactMap { source in FolderOnDisk(source.path).map { (name: source.name, folder: $0) } }
        var bySource: [String: [Overlap]] = [:]
        var pairs: [Pair] = []
        for (i, a) in roots.enumerated() {
            for b in roots[(i + 1)...] {
                // b inside a (or the same folder), else a inside b.
                if let offset = b.folder.offset(below: a.folder) {
                    pairs.append(Pair(outer: a.name, inner: b.name, offset: offset))
                    bySource[a.name, default: []].append(Overlap(other: b.name, place: offset.isEmpty ? .same : .inside(offset)))
                    bySource[b.name, default: []].append(Overlap(other: a.name, place: offset.isEmpty ? .same : .around(offset)))
                } else if let offset = a.folder.offset(below: b.folder) {
                    pairs.append(Pair(outer: b.name, inner: a.name, offset: offset))
                    bySource[b.name, default: []].append(Overlap(other: a.name, place: .inside(offset)))
                    bySource[a.name, default: []].append(Overlap(other: b.name, place: .around(offset)))
                }
            }
        }
        self.bySource = bySource
        self.pairs = pairs
    }

    /// Whether a source would walk to a path relative to its folder: no folder on the way excluded (nor syncgate's
    /// own, ``OwnPaths``), the file selected by its globs (as ``SourceScanner`` decides).
    public static func selects(_ source: SourceConfig, _ relativePath: String) -> Bool {
        var folder = ""
        let parts = relativePath.split(separator: "/")
        for part in parts.dropLast() {
            folder += (folder.isEmpty ? "" : "/") + part
            if source.skipsFolder(folder) { return false }
        }
        return source.selects(relativePath)
    }
}
