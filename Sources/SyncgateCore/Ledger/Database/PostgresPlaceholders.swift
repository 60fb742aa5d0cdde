import Foundation
import Synchronization

/// The ledger's SQL is written with `?` placeholders (SQLite's); PostgreSQL numbers them `$1, $2...`. A `?` inside a
/// quoted literal or identifier is left alone. Translations are kept (the ledger runs few distinct statements).
enum PostgresPlaceholders {
    private static let cache = Mutex<[String: String]>([:])

    static func numbered(_ sql: String) -> String {
        if let known = cache.withLock({ $0[sql] }) { return known }
        var result = ""
        result.reserveCapacity(sql.utf8.count + 16)
        var n = 0
        var quote: Character? = nil
        for c in sql {
            if let q = quote {
                if c == q { quote = nil }
                result.append(c)
            } else if c == "'" || c == "\"" {
                quote = c
                result.append(c)
            } else if c == "?" {
                n += 1
                result += "$\(n)"
            } else {
                result.append(c)
            }
        }
        cache.withLock { cache in
            if cache.count > 2000 { cache.removeAll() }  // statements with lists of varying length
            cache[sql] = result
        }
        return result
    }
}
