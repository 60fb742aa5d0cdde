/// Which files go where: files matching `match` (from the named sources, or all) go to every destination in `to`.
public struct RouteConfig: Sendable, Hashable {
    public var match: GlobSet
    public var sources: [String]?
    public var to: [String]
    /// What happens to the files of this route once delivered (nil: as their source says).
    public var afterSync: AfterSync?
    /// How soon its files go where the destination's `order:` names `priority`: higher first (default 0).
    public var priority: Int

    public init(match: GlobSet, sources: [String]? = nil, to: [String], afterSync: AfterSync? = nil, priority: Int = 0) {
        self.afterSync = afterSync
        self.priority = priority
        self.match = match
        self.sources = sources
        self.to = to
    }

    public func applies(source: String, relativePath: String) -> Bool {
        if let sources, !sources.contains(source) { return false }
        return match.matches(relativePath)
    }
}

struct RawRoute: Decodable {
    var match: GlobSet?
    var sources: [String]?
    var to: [String]
    var afterSync: AfterSync?
    var priority: Int?

    enum CodingKeys: String, CodingKey {
        case match, sources, to, priority
        case afterSync = "after_sync"
    }
}
