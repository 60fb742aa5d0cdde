import SyncgateCore

/// Who may do what over HTTP (docs/http.md, "Access"):
/// - the page's shell (`/`, its script and style) holds no data and is served to anyone who can connect: the
///   data it shows comes from the API, under the API's rules;
/// - reading (`/api/status`, `/api/events`, `/metrics`, `/healthz`, `/readyz`) needs the bearer token when the
///   server listens on an address other machines can reach (config load makes sure there is one then);
/// - changing anything (`POST`) needs the token whenever one is configured, and is refused when the request comes
///   from another origin (an `Origin` that is not this server's, or a browser's `Sec-Fetch-Site` saying so);
/// - on a loopback listener, token or not, every request must name a loopback host (`localhost`, 127.0.0.0/8,
///   `[::1]`, with or without a port) in its `Host` header, so that a web page whose own name resolves to 127.0.0.1
///   (DNS rebinding) can neither read nor change anything.
///
/// A token that is sent is always checked, even where none is needed: a wrong one is refused.
struct AccessPolicy: Sendable {
    /// What a request asks for.
    enum Kind: Sendable, Hashable {
        /// The page's static shell.
        case page
        /// Data: status, events, metrics, health.
        case read
        /// A change: retry, forget.
        case change
    }

    /// What is done with a request.
    enum Decision: Sendable, Hashable {
        case allow
        /// 401: the token is missing or wrong.
        case unauthorized(String)
        /// 403: refused whatever the token (another origin, a host that is not this machine's).
        case forbidden(String)
    }

    /// The headers that matter, as sent (nil: absent).
    struct Credentials: Sendable {
        var authorization: String?
        var origin: String?
        /// The request's authority (`Host`), `host[:port]`.
        var host: String?
        var fetchSite: String?
        /// `X-Forwarded-Proto` of a TLS proxy in front (`https`: the page's own origin is an https one). A page of
        /// another site cannot send it: it is not a header a browser lets a cross-origin request carry unasked.
        var forwardedProto: String?

        init(authorization: String? = nil, origin: String? = nil, host: String? = nil, fetchSite: String? = nil, forwardedProto: String? = nil) {
            self.authorization = authorization
            self.origin = origin
            self.host = host
            self.fetchSite = fetchSite
            self.forwardedProto = forwardedProto
        }
    }

    private let token: BearerToken?
    private let loopback: Bool

    init(settings: HTTPSettings) {
        token = settings.token.map { BearerToken($0) }
        loopback = settings.isLoopback
    }

    /// Whether a token is configured (the page then asks for it).
    var hasToken: Bool { token != nil }

    func decide(_ kind: Kind, _ credentials: Credentials) -> Decision {
        if loopback {
            // A loopback listener: only this machine's names, so that a rebound name cannot reach in.
            guard let host = credentials.host, AccessPolicy.isLoopbackName(AccessPolicy.hostName(ofAuthority: host)) else {
                return .forbidden("this server answers only to a loopback host name (localhost, 127.0.0.1, [::1])")
            }
        }
        if kind == .change, let refusal = crossOriginRefusal(credentials) { return .forbidden(refusal) }
        let needsToken = switch kind {
        case .page: false
        case .read: !loopback
        case .change: token != nil
        }
        if let sent = credentials.authorization {
            guard let token else { return .unauthorized("no token is configured; send no Authorization header") }
            guard let presented = BearerToken.presented(in: sent), token.matches(presented) else {
                return .unauthorized("the bearer token is wrong")
            }
            return .allow
        }
        return needsToken ? .unauthorized("this needs the bearer token (Authorization: Bearer ...)") : .allow
    }

    /// Why a change coming from elsewhere is refused (nil: it comes from this server's own pages, or from a client
    /// that is not a browser).
    private func crossOriginRefusal(_ credentials: Credentials) -> String? {
        if let origin = credentials.origin {
            // Scheme, host and port: this server speaks plain HTTP, so `https://` + its own host is another origin
            // (unless a TLS proxy in front says it serves the page over https).
            let scheme = credentials.forwardedProto?.lowercased() == "https" ? "https" : "http"
            guard let host = credentials.host, let own = AccessPolicy.Origin(scheme: scheme, authority: host),
                  let sent = AccessPolicy.Origin(serialized: origin), sent == own else {
                return "a change may come only from this server's own page (Origin is another site)"
            }
            return nil
        }
        // No Origin: a browser says where the request comes from in Sec-Fetch-Site.
        if let site = credentials.fetchSite?.lowercased(), site != "same-origin", site != "none" {
            return "a change may come only from this server's own page (Sec-Fetch-Site: \(site))"
        }
        return nil
    }

    /// An origin as browsers compare them: scheme, host and port (the scheme's default port when none is written),
    /// the scheme and host in lower case.
    struct Origin: Hashable {
        var scheme: String
        var host: String
        var port: Int

        /// From an `Origin` header such as `http://127.0.0.1:9464` (nil: `null`, or not an http(s) origin).
        init?(serialized origin: String) {
            guard let range = origin.range(of: "://") else { return nil }
            self.init(scheme: String(origin[..<range.lowerBound]), authority: String(origin[range.upperBound...]))
        }

        /// From a scheme and an authority `host[:port]` (a `Host` header).
        init?(scheme: String, authority: String) {
            let scheme = scheme.lowercased()
            guard scheme == "http" || scheme == "https", !authority.isEmpty, !authority.contains("/"), !authority.contains("@") else { return nil }
            let hostPart: Substring, portPart: Substring
            if authority.hasPrefix("[") {
                guard let close = authority.firstIndex(of: "]") else { return nil }
                hostPart = authority[...close]
                portPart = authority[authority.index(after: close)...]
            } else if let colon = authority.lastIndex(of: ":") {
                hostPart = authority[..<colon]
                portPart = authority[colon...]
            } else {
                hostPart = authority[...]
                portPart = ""
            }
            guard !hostPart.isEmpty else { return nil }
            let port: Int
            if portPart.isEmpty {
                port = scheme == "https" ? 443 : 80
            } else {
                guard portPart.first == ":", let number = Int(portPart.dropFirst()), (0...65535).contains(number) else { return nil }
                port = number
            }
            let host = hostPart.lowercased()
            self.scheme = scheme
            self.host = host
            self.port = port
        }
    }

    /// The host of an authority `host[:port]`, IPv6 brackets removed.
    static func hostName(ofAuthority authority: String) -> String {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return authority }
            return String(authority[authority.index(after: authority.startIndex)..<close])
        }
        if let colon = authority.lastIndex(of: ":") { return String(authority[..<colon]) }
        return authority
    }

    /// Whether a host name is this machine's own (`localhost`, `127.0.0.0/8`, `::1`).
    static func isLoopbackName(_ host: String) -> Bool {
        let lower = host.lowercased()
        if lower == "localhost" || lower.hasSuffix(".localhost") || lower == "::1" { return true }
        let parts = lower.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { part in UInt8(part) != nil }
    }
}
