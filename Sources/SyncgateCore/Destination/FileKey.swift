/// A file's identity: the source it comes from and its path relative to that source.
public struct FileKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var source: String
    public var path: String

    public init(source: String, path: String) {
        self.source = source
        self.path = path
    }

    public var description: String { path }

    public static func < (lhs: FileKey, rhs: FileKey) -> Bool {
        (lhs.source, lhs.path) < (rhs.source, rhs.path)
    }
}
