import Foundation
import Logging
import SyncgateCore

/// An OAuth2 access token, when it stops being valid, and when it is replaced (a margin before that).
struct AccessToken: Sendable {
    var value: Secret
    var expiresAt: Date
    /// Used until this moment, then replaced: ``OAuthTokenProvider/refreshMargin(lifetime:)`` before it expires.
    var refreshAt: Date

    init(value: Secret, expiresAt: Date, refreshAt: Date) {
        self.value = value
        self.expiresAt = expiresAt
        self.refreshAt = refreshAt
    }

    /// A token just issued, valid for `lifetime` seconds from `issuedAt`.
    init(value: Secret, lifetime: TimeInterval, issuedAt: Date) {
        let lifetime = max(0, lifetime)
        self.init(
            value: value, expiresAt: issuedAt.addingTimeInterval(lifetime),
            refreshAt: issuedAt.addingTimeInterval(lifetime - OAuthTokenProvider.refreshMargin(lifetime: lifetime)))
    }
}

/// The access tokens of a Sheets API destination, from its ``GoogleCredentialSource`` (a service-account key, a
/// gcloud application-default login, the GCE metadata server; see ``GoogleTokenFetcher``). A token is kept in
/// memory and, with a ``GoogleTokenCache``, on disk, until shortly before it expires; concurrent callers share one
/// exchange. The credentials file is read at the first token (so `validate` and `status` need no network and a
/// broken file blocks only its destination).
actor OAuthTokenProvider {
    static let scope = "https://www.googleapis.com/auth/spreadsheets"

    let source: GoogleCredentialSource
    private let transport: HTTPTransport
    /// The metadata server's own client: a short connect timeout, so that a machine off Google Cloud fails fast.
    private let metadataTransport: HTTPTransport
    private let cache: GoogleTokenCache?
    private let timeout: Duration
    private let logger: Logger?
    private let now: @Sendable () -> Date
    private var loaded: GoogleTokenFetcher.Credentials?
    private var cached: AccessToken?
    private var pending: Task<AccessToken, any Error>?
    /// Tokens fetched from Google so far (for tests and logs); tokens read from the disk cache are not counted.
    private(set) var exchanges = 0
    /// Why the last token could not be stored on disk, if it could not (for tests and a debug log).
    private(set) var cacheProblem: String?

    init(
        source: GoogleCredentialSource, transport: HTTPTransport, timeout: Duration, cache: GoogleTokenCache? = nil,
        logger: Logger? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.logger = logger
        self.source = source
        self.transport = transport
        // The metadata server is the machine's own (link-local): never through a proxy (docs/network.md).
        self.metadataTransport = HTTPTransport(connectTimeout: GoogleTokenFetcher.metadataConnectTimeout, network: .direct)
        self.cache = cache
        self.timeout = timeout
        self.now = now
    }

    init(credentialsPath: String, transport: HTTPTransport, timeout: Duration, now: @escaping @Sendable () -> Date = { Date() }) {
        self.init(source: .file(path: credentialsPath, origin: .config), transport: transport, timeout: timeout, now: now)
    }

    /// How long before expiry a cached token is replaced: a minute, or half the lifetime of a short-lived one.
    static func refreshMargin(lifetime: TimeInterval) -> TimeInterval { min(60, lifetime / 2) }

    /// A valid token: the one in memory, the one cached on disk, or a fresh one.
    func token() async throws -> AccessToken {
        if let cached, now() < cached.refreshAt { return cached }
        if let pending { return try await pending.value }
        let credentials = try load()
        let scope = OAuthTokenProvider.scope
        if let cache, let stored = cache.read(identity: credentials.identity, scope: scope, now: now()) {
            cached = stored
            return stored
        }
        let transport = self.transport
        let metadataTransport = self.metadataTransport
        let timeout = self.timeout
        let issuedAt = now()
        let task = Task {
            try await GoogleTokenFetcher.fetch(
                credentials, scope: scope, transport: transport, metadataTransport: metadataTransport, timeout: timeout, issuedAt: issuedAt)
        }
        pending = task
        defer { pending = nil }
        let token = try await task.value
        exchanges += 1
        cached = token
        if let cache {
            cacheProblem = cache.write(token, identity: credentials.identity, scope: scope)
            if let cacheProblem { logger?.debug("the access token is not cached on disk: \(cacheProblem)") }
        }
        return token
    }

    /// Forgets `token` after the API refused it (401), in memory and on disk, so that the next ``token()``
    /// exchanges a new one.
    func invalidate(_ token: AccessToken) {
        if let cached, cached.value == token.value { self.cached = nil }
        if let cache, let loaded { cache.remove(token, identity: loaded.identity, scope: OAuthTokenProvider.scope) }
    }

    /// The project billed for the requests of user credentials (`quota_project_id`), sent as `x-goog-user-project`.
    var quotaProject: String? { loaded?.quotaProject }

    func shutdown() async {
        await metadataTransport.shutdown()
    }

    private func load() throws -> GoogleTokenFetcher.Credentials {
        if let loaded { return loaded }
        let credentials = try OAuthTokenProvider.credentials(of: source)
        loaded = credentials
        return credentials
    }

    /// The source's credentials, read and checked (a file's key parsed): what an exchange needs. Errors block the
    /// destination and name the file, never its content.
    static func credentials(of source: GoogleCredentialSource) throws -> GoogleTokenFetcher.Credentials {
        switch source {
        case .metadataServer(let base, let lookedAt):
            return .metadataServer(baseURL: base, lookedAt: lookedAt)
        case .file(let path, let origin):
            let file: GoogleCredentialsFile
            do {
                file = try GoogleCredentialsFile(contentsOf: path)
            } catch let error as DestinationError where origin != .config {
                throw DestinationError.blocked("\(error.message) (named by \(origin.rawValue))", code: error.code)
            }
            return try credentials(of: file, path: path)
        }
    }

    /// A credentials file's content, ready to be exchanged (an impersonation's source too).
    static func credentials(of file: GoogleCredentialsFile, path: String) throws -> GoogleTokenFetcher.Credentials {
        switch file {
        case .serviceAccount(let key):
            do {
                return .serviceAccount(key, try JWTSigner(pem: key.privateKey.reveal(), keyID: key.privateKeyID), path: path)
            } catch {
                throw DestinationError.blocked("\(path): \(error)", code: "credentials")
            }
        case .authorizedUser(let user):
            return .authorizedUser(user, path: path)
        case .impersonated(let impersonated):
            return .impersonated(impersonated, source: try credentials(of: impersonated.source, path: path + " (source_credentials)"), path: path)
        }
    }

    static func formEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// An answer's text for a message: redacted first, then cut to 300 characters.
    static func snippet(_ text: String) -> String { Redactor.shared.snippet(text) }
}
