import Logging

/// The typed fields of log lines about deliveries, the same in `sync`'s lines and `run`'s: `destination`, `source`,
/// `path` and `class`, `scope`, `error_code`, `error` as strings; `bytes`, `attempts` and `code` as numbers.
/// `code` is there when the destination's error code is a number (`503`, `http-503`), `error_code` whenever it has
/// one (`AccessDenied`, `ENOSPC`, `http-503`).
public enum LogFields {
    /// The file and destination of an event, with its size.
    public static func file(_ event: DeliveryEvent) -> [String: Any] {
        ["destination": event.destination, "source": event.file.source, "path": event.file.path, "bytes": event.size]
    }

    /// Why it was not delivered: the failure's class, scope, codes, attempts and message.
    public static func failure(_ failure: DeliveryFailure) -> [String: Any] {
        var fields: [String: Any] = [
            "class": failure.failureClass.name, "scope": failure.scope.rawValue, "attempts": failure.attempts, "error": failure.message,
        ]
        if let code = failure.code {
            fields["error_code"] = code
            if let number = numericCode(code) { fields["code"] = number }
        }
        return fields
    }

    /// `503` of `503` or `http-503`; nil for a code that is no number.
    static func numericCode(_ code: String) -> Int? {
        let digits = code.hasPrefix("http-") ? code.dropFirst(5) : code[...]
        guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { return nil }
        return Int(digits)
    }

    /// Fields as swift-log metadata: numbers and booleans as `.stringConvertible` (a JSON line writes them as
    /// such, ``LogLine/value(_:)``), strings as strings.
    public static func metadata(_ fields: [String: Any]) -> Logger.Metadata {
        fields.mapValues { value -> Logger.MetadataValue in
            switch value {
            case let text as String: .string(text)
            case let flag as Bool: .stringConvertible(flag)
            case let number as Int: .stringConvertible(number)
            case let number as Int64: .stringConvertible(number)
            case let number as Double: .stringConvertible(number)
            default: .string("\(value)")
            }
        }
    }
}
