import Foundation
import Yams

/// Where a config that is not YAML at all goes wrong, for `load` and `parse`: a YAML error as a located
/// ``ConfigError``, and the line and column of the first byte that is not UTF-8.
extension GatewayConfig {
    /// A YAML error of Yams as a config error at its line and column, where it has one.
    static func yamlError(_ error: YamlError, file: String) -> ConfigError {
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            let detail = context.map { "\($0.text); " } ?? ""
            return ConfigError(file: file, line: mark.line, column: mark.column, keyPath: "", message: "YAML syntax: \(detail)\(problem)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            return ConfigError(
                file: file, line: context.mark.line, column: context.mark.column, keyPath: "",
                message: "duplicate key \(duplicates.map { "'\($0)'" }.joined(separator: ", ")) in a mapping"
            )
        case .reader(let problem, _, _, _):
            return ConfigError(file: file, line: nil, column: nil, keyPath: "", message: "YAML: \(problem)")
        default:
            return ConfigError(file: file, line: nil, column: nil, keyPath: "", message: "YAML: \(error)")
        }
    }

    /// The line and column (both from 1) of the first byte sequence of `data` that is not UTF-8.
    static func firstInvalidUTF8(_ data: Data) -> (Int, Int) {
        var line = 1
        var lineStart = 0
        var index = 0
        let bytes = [UInt8](data)
        while index < bytes.count {
            let valid = String(validating: bytes[index..<min(bytes.count, index + 4)].prefix(utf8Length(bytes[index])), as: UTF8.self) != nil
            if !valid { return (line, index - lineStart + 1) }
            if bytes[index] == 0x0A {
                line += 1
                lineStart = index + 1
            }
            index += max(1, utf8Length(bytes[index]))
        }
        return (line, 1)
    }

    /// The length of the UTF-8 sequence that `lead` starts (1 for a byte that starts none).
    private static func utf8Length(_ lead: UInt8) -> Int {
        switch lead {
        case 0..<0x80: 1
        case 0xC0..<0xE0: 2
        case 0xE0..<0xF0: 3
        case 0xF0..<0xF8: 4
        default: 1
        }
    }
}
