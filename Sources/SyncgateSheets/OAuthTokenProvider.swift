import Foundation
import SyncgateCore

/// An OAuth2 access token and when it stops being valid.
struct AccessToken: Sendable {
    var value: Secret
    var expiresAt: Date
}

/// Exchanges a signed service-account JWT for an access token at the key's `token_uri` (the OAuth2 JWT-bearer
/// grant, RFC 7523) and caches it until shortly before it expires. Concurrent callers share one exchange.
actor OAuthTokenProvider {
    static let scope = "https://www.googleapis.com/auth/spreadsheets"

    private let credentialsPath: String
    private let transport: HTTPTransport
    private let timeout: Duration
    private let now: @Sendable () -> Date
    private var loaded: (key: ServiceAccountKey, signer: JWTSigner)?
    private var cached: AccessToken?
    private var pending: Task<AccessToken, any Error>?
    /// Tokens fetched so far (for tests and logs).
    private(set) var exchanges = 0

    init(credentialsPath: String, transport: HTTPTransport, timeout: Duration, now: @escaping @Sendable () -> Date = { Date() }) {
        self.credentialsPath = credentialsPath
        self.transport = transport
        self.timeout = timeout
        self.now = now
    }

    /// How long before expiry a cached token is replaced: a minute, or half the lifetime of a short-lived one.
    static func refreshMargin(lifetime: TimeInterval) -> TimeInterval { min(60, lifetime / 2) }

    /// A valid token: the cached one, or a fresh one.
    func token() async throws -> AccessToken {
        if let cached, now() < cached.expiresAt { return cached }
        if let pending { return try await pending.value }
        let (key, signer) = try loadKey()
        let transport = self.transport
        let timeout = self.timeout
        let issuedAt = now()
        let task = Task { try await OAuthTokenProvider.exchange(key: key, signer: signer, transport: transport, timeout: timeout, issuedAt: issuedAt) }
        pending = task
        defer { pending = nil }
        let token = try await task.value
        exchanges += 1
        cached = token
        return token
    }

    /// Forgets `token` after the API refused it (401), so that the next ``token()`` exchanges a new one.
    func invalidate(_ token: AccessToken) {
        if let cached, cached.value == token.value { self.cached = nil }
    }

    private func loadKey() throws -> (ServiceAccountKey, JWTSigner) {
        if let loaded { return loaded }
        let key = try ServiceAccountKey(contentsOf: credentialsPath)
        let signer: JWTSigner
        do {
            signer = try JWTSigner(pem: key.privateKey.reveal(), keyID: key.privateKeyID)
        } catch {
            throw DestinationError.blocked("\(credentialsPath): \(error)", code: "credentials")
        }
        loaded = (key, signer)
        return (key, signer)
    }

    /// Exchanges one assertion. The endpoint unreachable: the destination is unavailable. The grant refused
    /// (`invalid_grant`, `invalid_client`, `unauthorized_client`, any other 4xx): blocked, the key or the account
    /// is wrong. 429, or 503 with Retry-After: throttled. Other 5xx: retryable.
    private static func exchange(
        key: ServiceAccountKey, signer: JWTSigner, transport: HTTPTransport, timeout: Duration, issuedAt: Date
    ) async throws -> AccessToken {
        let assertion = try signer.assertion(issuer: key.clientEmail, scope: scope, audience: key.tokenURI, issuedAt: issuedAt)
        let form = "grant_type=" + formEncode("urn:ietf:params:oauth:grant-type:jwt-bearer") + "&assertion=" + formEncode(assertion)
        let answer: HTTPAnswer
        do {
            answer = try await transport.send(
                method: .POST, url: key.tokenURI, headers: [("content-type", "application/x-www-form-urlencoded")],
                body: Array(form.utf8), timeout: timeout)
        } catch let error as TransportError {
            throw error.destinationError("token exchange")
        }
        let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any]
        guard answer.status == 200 else {
            let error = (object?["error"] as? String).map { Redactor.shared.snippet($0, limit: 64) } ?? "http-\(answer.status)"
            let detail = Redactor.shared.snippet(object?["error_description"] as? String ?? answer.text)
            let message = "token exchange at \(HTTPTransport.redactQuery(key.tokenURI)) refused (HTTP \(answer.status) \(error)): \(detail)"
            let after = SheetsErrorMapper.retryAfter(answer.headers)
            switch answer.status {
            case 429: throw DestinationError.throttled(message, code: error, after: after)
            case 503 where after != nil: throw DestinationError.throttled(message, code: error, after: after)
            case 408, 500...599: throw DestinationError.retryable(message, code: error, after: after)
            default: throw DestinationError.blocked(message, code: error)
            }
        }
        guard let value = object?["access_token"] as? String, !value.isEmpty else {
            throw DestinationError.blocked(
                "token exchange at \(HTTPTransport.redactQuery(key.tokenURI)) answered without an access_token (is token_uri an OAuth2 token endpoint?)",
                code: "token-response")
        }
        let lifetime = (object?["expires_in"] as? NSNumber)?.doubleValue ?? 3600
        let usable = max(0, lifetime - refreshMargin(lifetime: lifetime))
        return AccessToken(value: Secret(value), expiresAt: issuedAt.addingTimeInterval(usable))
    }

    static func formEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// An answer's text for a message: redacted first, then cut to 300 characters.
    static func snippet(_ text: String) -> String { Redactor.shared.snippet(text) }
}
