import Foundation

/// The hosts that are reached directly although a proxy is set: `NO_PROXY` / `no_proxy`, read the way curl reads
/// it (docs/network.md):
///
/// - entries separated by commas (or blanks); an empty one is ignored;
/// - `*` alone: every host;
/// - a host name matches itself and every name under it, with or without a leading dot (`example.com` and
///   `.example.com` both match `example.com` and `s3.example.com`, never `myexample.com`); `*.example.com` is read as
///   `.example.com`; case and a trailing dot do not matter;
/// - an IP address matches that address written as the URL's host (no name is resolved to compare);
/// - a CIDR range (`10.0.0.0/8`, `fd00::/8`) matches an address host inside it;
/// - any entry may end with `:port` (`[::1]:8443` for IPv6) and then matches only that port.
///
/// An entry that is none of these (`10.0.0.0/33`, `a b`) is ignored, as curl does.
public struct NoProxyRules: Sendable, Hashable {
    public enum Entry: Sendable, Hashable {
        case everything
        case domain(String, port: Int?)
        case range(IPAddress, prefix: Int, port: Int?)
    }

    /// The text as given (for the settings' fingerprint).
    public let text: String
    public let entries: [Entry]

    public static let empty = NoProxyRules("")

    public init(_ text: String) {
        self.text = text
        entries = text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap(NoProxyRules.entry)
    }

    public var isEmpty: Bool { entries.isEmpty }

    /// Whether a request to `host` (a name or an address literal, brackets allowed) on `port` goes direct.
    public func matches(host: String, port: Int) -> Bool {
        let name = NoProxyRules.normalised(host)
        let address = IPAddress(name)
        for entry in entries {
            switch entry {
            case .everything:
                return true
            case .domain(let domain, let only):
                guard only == nil || only == port else { continue }
                if name == domain || name.hasSuffix("." + domain) { return true }
            case .range(let network, let prefix, let only):
                guard only == nil || only == port, let address else { continue }
                if network.sharesPrefix(prefix, with: address) { return true }
            }
        }
        return false
    }

    static func normalised(_ host: String) -> String {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        while name.hasSuffix(".") { name.removeLast() }
        return name
    }

    static func entry(_ token: Substring) -> Entry? {
        let text = token.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return nil }
        if text == "*" { return .everything }
        var host = text
        var port: Int? = nil
        if text.hasPrefix("[") {
            // [v6], [v6]:port, [v6/prefix]
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let value = Int(rest.dropFirst()), (1...65535).contains(value) else { return nil }
                port = value
            }
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            // name:port or v4:port (a bare IPv6 address has several colons and no port)
            guard let value = Int(text[text.index(after: colon)...]), (1...65535).contains(value) else { return nil }
            host = String(text[..<colon])
            port = value
        }
        if let slash = host.firstIndex(of: "/") {
            guard let address = IPAddress(host[..<slash]), let bits = Int(host[host.index(after: slash)...]),
                  bits >= 0, bits <= address.bytes.count * 8 else { return nil }
            return .range(address, prefix: bits, port: port)
        }
        if let address = IPAddress(host) { return .range(address, prefix: address.bytes.count * 8, port: port) }
        var name = normalised(host)
        if name.hasPrefix("*.") { name.removeFirst(2) }
        while name.hasPrefix(".") { name.removeFirst() }
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_") }) else {
            return nil
        }
        return .domain(name, port: port)
    }
}
