/// A source's `max_delete_fraction`: the share of its files (above 0, at most 1) a walk may find gone since its last
/// complete walk before a mirror deletes nothing of it (see ``SourceJudge``).
public struct DeleteFraction: Sendable, Hashable, Decodable {
    public var value: Double

    public static let `default` = DeleteFraction(0.5)

    public init(_ value: Double) { self.value = value }

    public init(from decoder: any Decoder) throws {
        let value = try decoder.singleValueContainer().decode(Double.self)
        guard value > 0, value <= 1 else {
            throw ConfigValueError("must be > 0 and <= 1 (the share of the source's files that may be gone at once; 1: only an emptied source is held back)")
        }
        self.value = value
    }
}

extension DeleteFraction {
    /// As a person reads it: `0.5`, `1`.
    public var text: String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}
