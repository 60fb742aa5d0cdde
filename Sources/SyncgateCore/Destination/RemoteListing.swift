/// What ``Destination/list()`` returns.
public struct RemoteListing: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public var name: String
        public var size: Int64?
        public init(name: String, size: Int64? = nil) {
            self.name = name
            self.size = size
        }
    }

    public var entries: [Entry]
    /// Free space the destination reports, when it has such a notion (a head unit's quota).
    public var spaceAvailable: Int64?
    /// False when the destination may hold names the listing leaves out (SDL Core's ListFiles names at most 1,000
    /// files): a name missing from it proves nothing.
    public var isComplete: Bool

    public init(entries: [Entry], spaceAvailable: Int64? = nil, isComplete: Bool = true) {
        self.entries = entries
        self.spaceAvailable = spaceAvailable
        self.isComplete = isComplete
    }

    public var names: Set<String> { Set(entries.map(\.name)) }

    /// The names compared byte for byte (see ``ExactString``).
    public var exactNames: Set<ExactString> { Set(entries.map { ExactString($0.name) }) }
}
