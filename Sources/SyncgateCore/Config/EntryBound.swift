/// A source's `max_entries`: with `follow_symlinks`, the most entries one walk of the source takes in (see
/// ``SourceScanner``).
public struct EntryBound: Sendable, Hashable, Decodable {
    public var value: Int

    /// A million: far more than a tree where links lead to each folder once holds in practice, far fewer than the
    /// millions of paths a few levels of links to the same folders make.
    public static let `default` = EntryBound(1_000_000)

    public init(_ value: Int) { self.value = value }

    public init(from decoder: any Decoder) throws {
        let value = try decoder.singleValueContainer().decode(Int.self)
        guard (1_000...1_000_000_000).contains(value) else {
            throw ConfigValueError("must be between 1000 and 1000000000 (default \(EntryBound.default.value)): the entries a walk that follows links takes in")
        }
        self.value = value
    }
}
