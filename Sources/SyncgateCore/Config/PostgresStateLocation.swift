import Foundation

/// A PostgreSQL database holding the ledger: `postgres://user[:password]@host[:port]/database[?sslmode=...]`
/// (`postgresql://` too). The password comes from the URL, else `PGPASSWORD`, else `state.password_file`; it is a
/// ``Secret``, scrubbed from every message, and never part of ``displayName``.
public struct PostgresStateLocation: Sendable, Hashable {
    public var host: String
    public var port: Int
    public var user: String
    public var password: Secret?
    public var database: String
    public var tls: TLSMode

    /// `sslmode` of the URL: `disable` (the default), `prefer` (TLS when the server offers it) or `require`
    /// (TLS, the server's certificate checked against the system's trust roots; `verify-full` means the same).
    public enum TLSMode: String, Sendable, Hashable {
        case disable, prefer, require
    }

    public init(host: String, port: Int = 5432, user: String, password: Secret? = nil, database: String, tls: TLSMode = .disable) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.tls = tls
    }

    /// The URL without its password: what logs, errors, `status` and `validate` show.
    public var displayName: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(user)@\(shownHost):\(port)/\(database)"
    }

    /// Whether `text` is written as a PostgreSQL URL (else it is the path of an SQLite file).
    public static func isURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// Parses a URL; the error says what is wrong without repeating a password.
    public static func parse(_ text: String) throws -> PostgresStateLocation {
        guard let schemeEnd = text.range(of: "://") else { throw ConfigValueError("expected postgres://user@host/database") }
        var rest = Substring(text[schemeEnd.upperBound...])
        var query = ""
        if let mark = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: mark)...])
            rest = rest[..<mark]
        }
        guard let slash = rest.firstIndex(of: "/") else {
            throw ConfigValueError("the URL names no database (postgres://user@host/database)")
        }
        let authority = rest[..<slash]
        guard let database = String(rest[rest.index(after: slash)...]).removingPercentEncoding, !database.isEmpty,
            !database.contains("/")
        else { throw ConfigValueError("the URL names no database (postgres://user@host/database)") }
        guard let at = authority.lastIndex(of: "@") else {
            throw ConfigValueError("the URL names no user (postgres://user@host/database)")
        }
        let userInfo = authority[..<at]
        let hostPort = authority[authority.index(after: at)...]
        var password: Secret? = nil
        let userPart: Substring
        if let colon = userInfo.firstIndex(of: ":") {
            userPart = userInfo[..<colon]
            guard let decoded = String(userInfo[userInfo.index(after: colon)...]).removingPercentEncoding else {
                throw ConfigValueError("the password in the URL is not valid percent-encoding")
            }
            // Registered as written too, so that the URL itself is scrubbed wherever it might be echoed.
            Redactor.shared.register(String(userInfo[userInfo.index(after: colon)...]))
            if !decoded.isEmpty { password = Secret(decoded) }
        } else {
            userPart = userInfo
        }
        guard let user = String(userPart).removingPercentEncoding, !user.isEmpty else {
            throw ConfigValueError("the URL names no user (postgres://user@host/database)")
        }
        var host: String
        var portText: Substring? = nil
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { throw ConfigValueError("an IPv6 address needs its closing ']'") }
            host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let after = hostPort[hostPort.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty {
                throw ConfigValueError("unexpected '\(after)' after the host")
            }
        } else if let colon = hostPort.firstIndex(of: ":") {
            host = String(hostPort[..<colon])
            portText = hostPort[hostPort.index(after: colon)...]
        } else {
            host = String(hostPort)
        }
        guard !host.isEmpty else { throw ConfigValueError("the URL names no host (postgres://user@host/database)") }
        var port = 5432
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw ConfigValueError("'\(portText)' is not a port (1-65535)")
            }
            port = value
        }
        var tls = TLSMode.disable
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, parts[0] == "sslmode" else {
                throw ConfigValueError("unknown URL parameter '\(parts[0])' (known: sslmode)")
            }
            switch parts[1] {
            case "disable": tls = .disable
            case "prefer", "allow": tls = .prefer
            case "require", "verify-ca", "verify-full": tls = .require
            default: throw ConfigValueError("sslmode '\(parts[1])' is not one of disable, prefer, require, verify-full")
            }
        }
        host = host.removingPercentEncoding ?? host
        return PostgresStateLocation(host: host, port: port, user: user, password: password, database: database, tls: tls)
    }
}
