/// The `http:` keys: the status page and API of `syncgate run` (off unless the mapping is there).
public struct HTTPSettings: Sendable, Hashable {
    /// The address to listen on, as written (a name or an address).
    public var host: String
    public var port: Int
    /// A bearer token. Required when `host` is not a loopback address; always required to change anything
    /// (`POST /api/retry`).
    public var token: Secret?
    /// Connections open at once at most (`max_connections`); beyond that the one idle longest is closed, or the new
    /// one when every connection has a request under way (docs/http.md, "Limits").
    public var maxConnections: Int
    /// Whether only this machine can connect: every address `host` resolves to is a loopback address (judged when
    /// the settings are made, on the resolved addresses, never on the name's spelling).
    public private(set) var isLoopback: Bool

    public init(host: String, port: Int, token: Secret? = nil, maxConnections: Int = HTTPSettings.defaultMaxConnections) {
        self.host = host
        self.port = port
        self.token = token
        self.maxConnections = maxConnections
        self.isLoopback = LoopbackAddress.resolvesOnlyToLoopback(host)
    }

    public static let defaultListen = "127.0.0.1:9464"
    /// Well below the 1,024 descriptors systemd gives a service by default, so that the sources' own files and the
    /// destinations' connections always have room.
    public static let defaultMaxConnections = 256
}

/// The `http:` mapping as written: `listen: HOST:PORT` (an IPv6 host in brackets), `token`, `max_connections`.
struct RawHTTPSettings: Decodable {
    var settings: HTTPSettings

    enum CodingKeys: String, CodingKey {
        case listen, token
        case tokenFile = "token_file"
        case maxConnections = "max_connections"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let listen = try c.decodeIfPresent(String.self, forKey: .listen) ?? HTTPSettings.defaultListen
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]), (1...65535).contains(port) else {
            throw ConfigValueError("'\(listen)' is not HOST:PORT (e.g. 127.0.0.1:9464)", key: CodingKeys.listen)
        }
        var host = String(listen[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw ConfigValueError("needs a host (e.g. 127.0.0.1:9464)", key: CodingKeys.listen) }
        let token = try c.decodeSecretIfPresent(.token, orFile: .tokenFile)
        if let token, token.reveal().count < 16 {
            throw ConfigValueError("must be at least 16 characters (a long random string)", key: CodingKeys.token)
        }
        let maxConnections = try c.decodeIfPresent(Int.self, forKey: .maxConnections) ?? HTTPSettings.defaultMaxConnections
        guard (8...16_384).contains(maxConnections) else {
            throw ConfigValueError("must be between 8 and 16384 (default \(HTTPSettings.defaultMaxConnections))", key: CodingKeys.maxConnections)
        }
        settings = HTTPSettings(host: host, port: port, token: token, maxConnections: maxConnections)
        if !settings.isLoopback && token == nil {
            throw ConfigValueError(
                "listening on \(host), which other machines can reach (or which does not resolve to loopback addresses only), needs a token (http.token)",
                key: CodingKeys.token)
        }
    }
}
