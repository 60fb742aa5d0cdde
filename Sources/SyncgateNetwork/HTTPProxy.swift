import AsyncHTTPClient
import Foundation
import SyncgateCore

/// An HTTP proxy server: `http://[user[:password]@]host[:port]` as `HTTPS_PROXY`, `HTTP_PROXY` and the `proxy`
/// key write it. A value without a scheme is read as `http://` (as curl does); the port defaults to 80 (as Python
/// and Go do; curl assumes 1080, so write the port). A path is ignored. User and password are percent-decoded.
///
/// The password is a ``Secret``: registered with the redactor (with `user:password`, whose base64 is the
/// `Proxy-Authorization` header), never in ``description``, never in an error.
///
/// AsyncHTTPClient reaches every destination through an HTTP proxy with a `CONNECT` tunnel, `http://` ones too
/// (a proxy that allows `CONNECT` to port 443 only cannot carry an `http://` endpoint on another port).
public struct HTTPProxy: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var username: String?
    public var password: Secret?

    /// Why a proxy URL was refused; the text never holds the password.
    public struct ParseError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    public init(host: String, port: Int, username: String? = nil, password: Secret? = nil) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
    }

    public init(parsing text: String) throws(ParseError) {
        let shown = HTTPProxy.masked(text)
        var rest = Substring(text.trimmingCharacters(in: .whitespaces))
        if let separator = rest.range(of: "://") {
            let scheme = rest[..<separator.lowerBound].lowercased()
            switch scheme {
            case "http":
                break
            case "https":
                throw ParseError(description: "'\(shown)': a proxy reached over TLS (https://) is not supported; give its http:// address")
            case "socks4", "socks4a", "socks5", "socks5h":
                throw ParseError(description: "'\(shown)': SOCKS proxies are not supported; give an HTTP proxy (http://host:port)")
            default:
                throw ParseError(description: "'\(shown)' is not an http:// proxy URL (http://[user:password@]host:port)")
            }
            rest = rest[separator.upperBound...]
        }
        // The authority ends at the path, query or fragment.
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        var hostPort = authority
        if let at = authority.lastIndex(of: "@") {
            let userinfo = authority[..<at]
            hostPort = authority[authority.index(after: at)...]
            let user: Substring
            let pass: Substring?
            if let colon = userinfo.firstIndex(of: ":") {
                user = userinfo[..<colon]
                pass = userinfo[userinfo.index(after: colon)...]
            } else {
                user = userinfo
                pass = nil
            }
            guard let decodedUser = String(user).removingPercentEncoding else {
                throw ParseError(description: "'\(shown)': the user is not valid percent-encoding")
            }
            username = decodedUser
            if let pass {
                guard let decodedPass = String(pass).removingPercentEncoding else {
                    throw ParseError(description: "'\(shown)': the password is not valid percent-encoding")
                }
                password = Secret(decodedPass)
                if decodedPass.count >= 4 { Redactor.shared.register("\(decodedUser):\(decodedPass)") }
            } else {
                password = nil
            }
        } else {
            username = nil
            password = nil
        }
        var portText: Substring? = nil
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else {
                throw ParseError(description: "'\(shown)': an IPv6 address needs its closing ']'")
            }
            host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            guard IPAddress(host)?.isIPv6 == true else { throw ParseError(description: "'\(shown)': '[\(host)]' is not an IPv6 address") }
            let after = hostPort[hostPort.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw ParseError(description: "'\(shown)': expected ':port' after ']'") }
                portText = after.dropFirst()
            }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = String(hostPort[..<colon])
            portText = hostPort[hostPort.index(after: colon)...]
        } else {
            host = String(hostPort)
        }
        guard !host.isEmpty else { throw ParseError(description: "'\(shown)' names no proxy host (http://host:port)") }
        guard IPAddress(host) != nil || host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_") }) else {
            throw ParseError(description: "'\(shown)': '\(host)' is not a host name")
        }
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw ParseError(description: "'\(shown)': '\(portText)' is not a port (1-65535)")
            }
            port = value
        } else {
            port = 80
        }
    }

    /// `http://user@host:port`: the proxy without its password.
    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        let user = username.map { $0.isEmpty ? "" : "\($0)@" } ?? ""
        return "http://\(user)\(shownHost):\(port)"
    }

    /// AsyncHTTPClient's proxy setting, with Basic authorization when a user is given.
    public var clientProxy: HTTPClient.Configuration.Proxy {
        let authorization = username.map { HTTPClient.Authorization.basic(username: $0, password: password?.reveal() ?? "") }
        return .server(host: host, port: port, authorization: authorization)
    }

    /// What identifies the proxy in a settings fingerprint (which is hashed): the password is part of it, so that
    /// a new password counts as new settings.
    var fingerprintText: String {
        "\(description)\u{0}\(password?.reveal() ?? "")"
    }

    /// `text` with whatever stands between `://` (or the start) and the last `@` of the authority replaced, for
    /// messages about a value that could not be read (its password is not registered yet).
    public static func masked(_ text: String) -> String {
        let start = text.range(of: "://")?.upperBound ?? text.startIndex
        let authorityEnd = text[start...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? text.endIndex
        guard let at = text[start..<authorityEnd].lastIndex(of: "@") else { return text }
        return String(text[..<start]) + "<redacted>" + String(text[at...])
    }
}
