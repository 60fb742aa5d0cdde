import Foundation
import Logging

/// One line on standard error, as every command writes it: `syncgate: [LEVEL: ]message key=value ...` for people,
/// or, with `--log-format json`, one JSON object per line for log shippers: `time`, `level`, `label`, `message` and
/// the fields as keys, typed (a count or a size is a number, a name a string). Registered secrets are scrubbed from
/// the message and every string field either way.
public enum LogLine {
    public enum Format: String, Sendable, CaseIterable {
        case plain, json
    }

    /// The JSON form: one object, no line break.
    public static func json(level: Logger.Level, label: String, message: String, fields: [String: Any] = [:], time: Date = Date()) -> String {
        var object: [String: Any] = [:]
        for (key, value) in fields { object[key] = redacted(value) }
        object["time"] = ReportJSON.time(time)
        object["level"] = level.rawValue
        object["label"] = label
        object["message"] = Redactor.shared.redact(message)
        return ReportJSON.encode(object)
    }

    /// Strings scrubbed of secrets, in arrays and objects too; numbers and booleans as they are.
    private static func redacted(_ value: Any) -> Any {
        switch value {
        case let text as String: return Redactor.shared.redact(text)
        case let items as [Any]: return items.map(redacted)
        case let object as [String: Any]: return object.mapValues(redacted)
        default: return ReportJSON.jsonValue(value) == nil ? Redactor.shared.redact("\(value)") : value
        }
    }

    /// A swift-log metadata value as a JSON value: a number or a boolean logged as one
    /// (`.stringConvertible(bytes)`) stays one; anything else is its text.
    public static func value(_ metadata: Logger.MetadataValue) -> Any {
        switch metadata {
        case .string(let text): return text
        case .stringConvertible(let value):
            switch value {
            case let flag as Bool: return flag
            case let number as Int: return number
            case let number as Int64: return number
            case let number as Int32: return number
            case let number as UInt64: return number
            case let number as UInt32: return number
            case let number as UInt: return number
            case let number as Double where number.isFinite: return number
            default: return value.description
            }
        case .array(let items): return items.map(value)
        case .dictionary(let members): return members.mapValues(value)
        }
    }

    /// `key=value` pairs of the plain form, sorted by key (nothing when there are none).
    public static func plainFields(_ metadata: Logger.Metadata) -> String {
        metadata.isEmpty ? "" : " " + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    }
}
