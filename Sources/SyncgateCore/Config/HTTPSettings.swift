/// The `http:` keys: the status page and API of `syncgate run` (off unless the mapping is there).
public struct HTTPSettings: Sendable, Hashable {
    /// The address to listen on.
    public var host: String
    public var port: Int
    /// A bearer token. Required when `host` is not a loopback address; always required to change anything
    /// (`POST /api/retry`).
    public var token: Secret?

    public init(host: String, port: Int, token: Secret? = nil) {
        self.host = host
        self.port = port
        self.token = token
    }

    /// Whether only this machine can connect.
    public var isLoopback: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    public static let defaultListen = "127.0.0.1:9464"
}

/// The `http:` mapping as written: `listen: HOST:PORT` (an IPv6 host in brackets), `token`.
struct RawHTTPSettings: Decodable {
    var settings: HTTPSettings

    enum CodingKeys: String, CodingKey {
        case listen, token
        case tokenFile = "token_file"
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
        settings = HTTPSettings(host: host, port: port, token: token)
        if !settings.isLoopback && token == nil {
            throw ConfigValueError("listening on \(host), which other machines can reach, needs a token (http.token)", key: CodingKeys.token)
        }
    }
}
