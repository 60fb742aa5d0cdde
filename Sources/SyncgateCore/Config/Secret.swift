/// A configured secret (a key, a password, a token). Prints as `<redacted>`; its value is registered with
/// ``Redactor`` so that it is scrubbed from every log line, error message, event and ledger row.
public struct Secret: Sendable, Hashable, Decodable, CustomStringConvertible, CustomDebugStringConvertible {
    private let value: String

    public init(_ value: String) {
        self.value = value
        Redactor.shared.register(value)
    }

    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }

    /// The secret itself, for the wire only.
    public func reveal() -> String { value }

    public var isEmpty: Bool { value.isEmpty }
    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
}
