/// What happens to a source file once every destination it is routed to holds it (`after_sync:` of a source or a
/// route): kept (the default), or deleted (a move).
public enum AfterSync: String, Sendable, Hashable, CaseIterable {
    case keep
    case delete
}

extension AfterSync: Decodable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = AfterSync(rawValue: text) else {
            throw ConfigValueError("'\(text)' is not an after_sync mode (keep, delete)")
        }
        self = value
    }
}
