import Foundation

/// Which proxy, if any, a destination's requests go through (docs/network.md):
///
/// 1. The destination's `proxy` key, when set: `none` (direct), or a proxy URL used for every request of the
///    destination, whatever the environment says (`NO_PROXY` included: the key is already per destination).
/// 2. Else the environment, as curl and the AWS and Google SDKs read it: `https_proxy` / `HTTPS_PROXY` for `https://`
///    URLs, `http_proxy` / `HTTP_PROXY` for `http://` ones; where both spellings are set, the lower-case one wins
///    (as in curl and Python's urllib, which botocore and Google's libraries use). An empty value is unset.
///    `NO_PROXY` / `no_proxy` (lower-case first too) lists hosts reached directly (``NoProxyRules``), and a loopback
///    host (`localhost`, `*.localhost`, 127.0.0.0/8, `::1`) is always reached directly: a proxy elsewhere cannot
///    reach this machine's loopback (Go's net/http does the same).
public struct ProxySettings: Sendable, Hashable {
    /// The `proxy` key.
    public enum Override: Sendable, Hashable {
        case direct
        case server(HTTPProxy)
    }

    public var override: Override?
    /// From `https_proxy` / `HTTPS_PROXY`, with the variable's name.
    public var https: Source?
    /// From `http_proxy` / `HTTP_PROXY`, with the variable's name.
    public var http: Source?
    public var noProxy: NoProxyRules
    /// The variable ``noProxy`` was read from (`no_proxy` or `NO_PROXY`), for messages.
    public var noProxyVariable = "NO_PROXY"

    public struct Source: Sendable, Hashable {
        public var proxy: HTTPProxy
        public var variable: String
    }

    /// No proxy at all.
    public static let none = ProxySettings(override: nil, https: nil, http: nil, noProxy: .empty)

    public init(override: Override?, https: Source?, http: Source?, noProxy: NoProxyRules) {
        self.override = override
        self.https = https
        self.http = http
        self.noProxy = noProxy
    }

    /// The variables read, lower-case first.
    public static let httpsVariables = ["https_proxy", "HTTPS_PROXY"]
    public static let httpVariables = ["http_proxy", "HTTP_PROXY"]
    public static let noProxyVariables = ["no_proxy", "NO_PROXY"]

    /// The settings of a destination whose `proxy` key is `override` (nil when absent). With the key set, the
    /// environment is not read at all (so a malformed variable does not matter to it).
    public init(override: Override?, environment: [String: String]) throws(NetworkSettingsError) {
        guard override == nil else {
            self.init(override: override, https: nil, http: nil, noProxy: .empty)
            return
        }
        func source(_ names: [String]) throws(NetworkSettingsError) -> Source? {
            guard let (name, value) = ProxySettings.first(names, in: environment) else { return nil }
            do {
                return Source(proxy: try HTTPProxy(parsing: value), variable: name)
            } catch {
                throw NetworkSettingsError(key: "proxy", "\(name): \(error.description) (set `proxy:` on the destination to override it)")
            }
        }
        let noProxy = ProxySettings.first(ProxySettings.noProxyVariables, in: environment)
        self.init(
            override: nil, https: try source(ProxySettings.httpsVariables), http: try source(ProxySettings.httpVariables),
            noProxy: noProxy.map { NoProxyRules($0.value) } ?? .empty)
        if let noProxy { noProxyVariable = noProxy.name }
    }

    /// The first of `names` set to a non-empty value.
    static func first(_ names: [String], in environment: [String: String]) -> (name: String, value: String)? {
        for name in names {
            if let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty { return (name, value) }
        }
        return nil
    }

    /// The proxy a request to `scheme://host:port` goes through, with where it was set; nil: direct.
    public func decision(scheme: String, host: String, port: Int?) -> Decision {
        switch override {
        case .direct: return .direct(reason: "proxy: none")
        case .server(let proxy): return .proxy(proxy, setBy: "the proxy key")
        case nil: break
        }
        let secure = scheme.lowercased() == "https"
        guard let source = secure ? https : http else { return .direct(reason: nil) }
        let effectivePort = port ?? (secure ? 443 : 80)
        if noProxy.matches(host: host, port: effectivePort) {
            return .direct(reason: "\(noProxyVariable) matches \(host)")
        }
        if ProxySettings.isLoopback(host) { return .direct(reason: "\(host) is a loopback host") }
        return .proxy(source.proxy, setBy: source.variable)
    }

    /// ``decision(scheme:host:port:)`` for a URL (a URL without a host goes direct).
    public func decision(for url: URL) -> Decision {
        guard let host = url.host, !host.isEmpty else { return .direct(reason: nil) }
        return decision(scheme: url.scheme ?? "https", host: host, port: url.port)
    }

    public enum Decision: Sendable, Hashable, CustomStringConvertible {
        /// `reason`: why a proxy that is set is not used (nil when none is set).
        case direct(reason: String?)
        case proxy(HTTPProxy, setBy: String)

        public var proxy: HTTPProxy? {
            if case .proxy(let proxy, _) = self { return proxy }
            return nil
        }

        /// `through the proxy http://user@host:3128 (HTTPS_PROXY)`, or `direct (NO_PROXY matches host)`.
        public var description: String {
            switch self {
            case .direct(let reason): reason.map { "direct (\($0))" } ?? "direct"
            case .proxy(let proxy, let setBy): "through the proxy \(proxy) (\(setBy))"
            }
        }
    }

    /// `localhost`, a name under `.localhost`, or a loopback address.
    public static func isLoopback(_ host: String) -> Bool {
        let name = NoProxyRules.normalised(host)
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        return IPAddress(name)?.isLoopback == true
    }

    /// What the settings fingerprint holds of them (hashed there, never shown).
    var fingerprintText: String {
        var parts: [String] = []
        switch override {
        case .direct: parts.append("override=none")
        case .server(let proxy): parts.append("override=\(proxy.fingerprintText)")
        case nil: break
        }
        if let https { parts.append("https=\(https.proxy.fingerprintText)") }
        if let http { parts.append("http=\(http.proxy.fingerprintText)") }
        if !noProxy.isEmpty { parts.append("no_proxy=\(noProxy.text)") }
        return parts.joined(separator: "\u{1}")
    }
}
