import SyncgateCore

/// The configured bearer token, compared in time that does not depend on where a wrong guess differs. Prints as
/// `<redacted>`; its value is never logged, echoed or sent.
struct BearerToken: Sendable, CustomStringConvertible {
    private let bytes: [UInt8]

    init(_ secret: Secret) { bytes = Array(secret.reveal().utf8) }

    /// The token of an `Authorization: Bearer TOKEN` header (nil: another scheme, or none given).
    static func presented(in header: String) -> [UInt8]? {
        let trimmed = header.drop { $0 == " " }
        guard trimmed.count > 7, trimmed.prefix(7).lowercased() == "bearer " else { return nil }
        let value = trimmed.dropFirst(7).drop { $0 == " " }
        let token = value.reversed().drop { $0 == " " }.reversed()
        return token.isEmpty ? nil : Array(String(token).utf8)
    }

    /// Whether `presented` is the token: every byte is looked at whatever the first difference.
    func matches(_ presented: [UInt8]) -> Bool {
        var difference = presented.count ^ bytes.count
        for index in 0..<presented.count {
            difference |= Int(presented[index] ^ bytes[index % max(1, bytes.count)])
        }
        return difference == 0 && !bytes.isEmpty
    }

    var description: String { "<redacted>" }
}
