/// Which files go where: files matching `match` (from the named sources, or all) go to every destination in `to`.
public struct RouteConfig: Sendable, Hashable {
    public var match: GlobSet
    public var sources: [String]?
    public var to: [String]

    public init(match: GlobSet, sources: [String]? = nil, to: [String]) {
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
}
