/// Percent-encoding as SigV4 and S3 define it: every byte of the UTF-8 form is encoded as `%XX` (upper-case hex)
/// except the unreserved characters `A-Z a-z 0-9 - . _ ~`, and, in object key paths, `/`.
/// Applied exactly once; paths are never normalised (S3 keys may hold `//`, `./` and `../`).
public enum S3URIEncoding {
    private static let hex: [UInt8] = Array("0123456789ABCDEF".utf8)

    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Encodes `text`; `keepSlash` leaves `/` as is (for paths), otherwise it becomes `%2F` (query components).
    public static func encode(_ text: String, keepSlash: Bool = false) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) || (keepSlash && byte == UInt8(ascii: "/")) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The path of an object: `/bucket/key` (path style) or `/key` (virtual-hosted style), encoded once.
    public static func objectPath(bucket: String?, key: String) -> String {
        var path = "/"
        if let bucket { path += encode(bucket) + "/" }
        return path + encode(key, keepSlash: true)
    }

    /// A canonical query string: each name and value encoded, pairs sorted by encoded name then value,
    /// joined with `&`; a missing value is written as `name=`.
    public static func canonicalQuery(_ items: [(name: String, value: String)]) -> String {
        items.map { (encode($0.name), encode($0.value)) }
            .sorted { $0.0 == $1.0 ? $0.1 < $1.1 : $0.0 < $1.0 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// Decodes `%XX` sequences (and, when `plusIsSpace`, `+` as a space) of text the server encoded,
    /// such as keys in a listing asked for with `encoding-type=url`. Invalid sequences are kept as they are.
    public static func decode(_ text: String, plusIsSpace: Bool = false) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        func value(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = value(bytes[index + 1]), let low = value(bytes[index + 2])
            {
                out.append(high << 4 | low)
                index += 3
            } else if plusIsSpace && byte == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
                index += 1
            } else {
                out.append(byte)
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
