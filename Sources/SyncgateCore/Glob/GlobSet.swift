/// An ordered list of ``Glob``s with gitignore semantics: the last pattern that matches decides, and a `!`
/// pattern that matches says "not".
public struct GlobSet: Sendable, Hashable, Decodable {
    public var globs: [Glob]

    public init(_ globs: [Glob]) { self.globs = globs }

    public init(patterns: [String]) throws { self.globs = try patterns.map(Glob.init) }

    public init(from decoder: any Decoder) throws {
        globs = try [Glob](from: decoder)
    }

    /// `true` / `false` when some pattern matches (the last one decides), `nil` when none does.
    public func decision(for path: String) -> Bool? {
        for glob in globs.reversed() where glob.matches(path) {
            return !glob.isNegated
        }
        return nil
    }

    /// Whether the set selects the path.
    public func matches(_ path: String) -> Bool { decision(for: path) ?? false }

    public var isEmpty: Bool { globs.isEmpty }
    public var patterns: [String] { globs.map(\.pattern) }
}
