import SyncgateCore

/// Who may do what over HTTP (docs/http.md, "Access"):
/// - the page's shell (`/`, its script and style) holds no data and is served to anyone who can connect: the
///   data it shows comes from the API, under the API's rules;
/// - reading (`/api/status`, `/api/events`, `/metrics`, `/healthz`, `/readyz`) needs the bearer token when the
///   server listens on an address other machines can reach (config load makes sure there is one then);
/// - changing anything (`POST`) needs the token whenever one is configured, and is refused when the request comes
///   from another origin (an `Origin` that is not this server's, or a browser's `Sec-Fetch-Site` saying so);
/// - without a token (loopback only), every request must name a loopback host in its `Host` header, so that a web
///   page whose own name resolves to 127.0.0.1 (DNS rebinding) can neither read nor change anything.
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

        init(authorization: String? = nil, origin: String? = nil, host: String? = nil, fetchSite: String? = nil) {
            self.authorization = authorization
            self.origin = origin
            self.host = host
            self.fetchSite = fetchSite
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
        if token == nil {
            // Loopback without a token: only this machine's names, so that a rebound name cannot reach in.
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
            guard let host = credentials.host, let originAuthority = AccessPolicy.authority(ofOrigin: origin),
                  originAuthority.lowercased() == host.lowercased() else {
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

    /// `host:port` of an origin such as `http://127.0.0.1:9464` (nil: `null` or not an http(s) origin).
    static func authority(ofOrigin origin: String) -> String? {
        let lower = origin.lowercased()
        for scheme in ["http://", "https://"] where lower.hasPrefix(scheme) {
            let rest = origin.dropFirst(scheme.count)
            guard !rest.isEmpty, !rest.contains("/") else { return nil }
            return String(rest)
        }
        return nil
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
