import Crypto
import Foundation
import NIOHTTP1
import SyncgateCore

/// Asks Google for an access token with the flow the credentials call for:
/// - a service-account key: a signed JWT exchanged at its `token_uri` (the JWT-bearer grant, RFC 7523);
/// - gcloud's application-default login (`authorized_user`): the refresh-token grant at its `token_uri`
///   (`client_id`, `client_secret`, `refresh_token`, `grant_type=refresh_token`, `scope`);
/// - an impersonated service account: a token of its `source_credentials` (one of the two above, with the
///   cloud-platform scope), then IAM's `generateAccessToken` at `service_account_impersonation_url`
///   (`{"scope": [...], "lifetime": "3600s"}` with that token as the bearer), which answers `accessToken` and
///   `expireTime`;
/// - the GCE metadata server: `GET /computeMetadata/v1/instance/service-accounts/default/token?scopes=...` with
///   `Metadata-Flavor: Google`, whose answer must carry the same header (anything else at that address is not
///   Google's metadata server).
///
/// A token endpoint that cannot be reached makes the destination unavailable; a refusal (`invalid_grant`,
/// `invalid_client`, `invalid_scope`, any other 4xx) blocks it; 429, or 503 with Retry-After, throttles it; other
/// 5xx are retryable.
enum GoogleTokenFetcher {
    /// Credentials read and checked, ready to be exchanged.
    enum Credentials: Sendable {
        case serviceAccount(ServiceAccountKey, JWTSigner, path: String)
        case authorizedUser(AuthorizedUserCredentials, path: String)
        indirect case impersonated(ImpersonatedCredentials, source: Credentials, path: String)
        case metadataServer(baseURL: String, lookedAt: [String])

        /// A digest of who the token is for and where it comes from (the token endpoint; the account; a digest of
        /// the key or refresh token, so that a new login is another identity): the token cache's key. It holds
        /// no secret, and no secret can be found from it.
        var identity: String {
            func digest(_ text: String) -> String { GoogleCredentialSource.hex(SHA256.hash(data: Data(text.utf8))) }
            let parts: [String]
            switch self {
            case .serviceAccount(let key, _, _):
                parts = ["service_account", key.tokenURI, key.clientEmail, key.privateKeyID ?? "", digest(key.privateKey.reveal())]
            case .authorizedUser(let user, _):
                parts = ["authorized_user", user.tokenURI, user.clientID, digest(user.refreshToken.reveal())]
            case .impersonated(let impersonated, let source, _):
                parts = ["impersonated_service_account", impersonated.impersonationURL] + impersonated.delegates + [source.identity]
            case .metadataServer(let base, _):
                parts = ["metadata_server", base, "default"]
            }
            return digest(parts.joined(separator: "\u{0}"))
        }

        /// The credentials file's `type`; nil for the metadata server.
        var fileType: String? {
            switch self {
            case .serviceAccount: "service_account"
            case .authorizedUser: "authorized_user"
            case .impersonated: "impersonated_service_account"
            case .metadataServer: nil
            }
        }

        /// The project billed for user credentials' requests (`x-goog-user-project`).
        var quotaProject: String? {
            switch self {
            case .authorizedUser(let user, _): return user.quotaProjectID
            case .impersonated(let impersonated, _, _): return impersonated.quotaProjectID
            default: return nil
            }
        }
    }

    static func fetch(
        _ credentials: Credentials, scope: String, transport: HTTPTransport, metadataTransport: HTTPTransport, timeout: Duration,
        issuedAt: Date
    ) async throws -> AccessToken {
        switch credentials {
        case .serviceAccount(let key, let signer, _):
            let assertion = try signer.assertion(issuer: key.clientEmail, scope: scope, audience: key.tokenURI, issuedAt: issuedAt)
            let form = "grant_type=" + OAuthTokenProvider.formEncode("urn:ietf:params:oauth:grant-type:jwt-bearer")
                + "&assertion=" + OAuthTokenProvider.formEncode(assertion)
            let answer = try await post(form: form, to: key.tokenURI, transport: transport, timeout: timeout)
            return try token(from: answer, context: "token exchange at \(HTTPTransport.redactQuery(key.tokenURI))", issuedAt: issuedAt) { _ in nil }
        case .authorizedUser(let user, let path):
            let answer = try await post(form: user.refreshForm(scope: scope), to: user.tokenURI, transport: transport, timeout: timeout)
            return try token(from: answer, context: "token exchange at \(HTTPTransport.redactQuery(user.tokenURI))", issuedAt: issuedAt) { error in
                switch error {
                case "invalid_grant":
                    "the refresh token of \(path) (authorized_user) was revoked or has expired: run `gcloud auth application-default login` again"
                case "invalid_scope":
                    "the login of \(path) does not grant the Sheets scope: run `gcloud auth application-default login --scopes="
                        + "\(scope),https://www.googleapis.com/auth/cloud-platform`"
                case "invalid_client", "unauthorized_client":
                    "\(path) names an OAuth client (client_id, client_secret) that the token endpoint does not accept"
                default: nil
                }
            }
        case .impersonated(let impersonated, let source, let path):
            let sourceToken = try await fetch(
                source, scope: ImpersonatedCredentials.sourceScope, transport: transport, metadataTransport: metadataTransport, timeout: timeout,
                issuedAt: issuedAt)
            return try await impersonatedToken(impersonated, bearer: sourceToken, path: path, scope: scope, transport: transport, timeout: timeout,
                                               issuedAt: issuedAt)
        case .metadataServer(let base, let lookedAt):
            return try await metadataToken(base: base, lookedAt: lookedAt, scope: scope, transport: metadataTransport, timeout: timeout, issuedAt: issuedAt)
        }
    }

    /// IAM's `generateAccessToken`: the target service account's token for `scope`, asked with the source's token.
    /// A refusal is Google's error object (`{"error": {"code", "message", "status"}}`): 401, 403 (the source may not
    /// act as the account, or the account does not exist) and 404 block the destination; 429 throttles it; 5xx are
    /// retryable.
    private static func impersonatedToken(
        _ impersonated: ImpersonatedCredentials, bearer: AccessToken, path: String, scope: String, transport: HTTPTransport, timeout: Duration,
        issuedAt: Date
    ) async throws -> AccessToken {
        let context = "impersonation of \(impersonated.target) at \(HTTPTransport.redactQuery(impersonated.impersonationURL))"
        let answer: HTTPAnswer
        do {
            answer = try await transport.send(
                method: .POST, url: impersonated.impersonationURL,
                headers: [("authorization", "Bearer " + bearer.value.reveal()), ("content-type", "application/json")],
                body: impersonated.requestBody(scope: scope), timeout: timeout, maxBody: 1 << 20)
        } catch let error as TransportError {
            throw error.destinationError(context)
        }
        let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any]
        guard answer.status == 200 else {
            let error = object?["error"] as? [String: Any]
            let status = (error?["status"] as? String).map { Redactor.shared.snippet($0, limit: 64) } ?? "http-\(answer.status)"
            let detail = Redactor.shared.snippet(error?["message"] as? String ?? answer.text)
            var message = "\(context) refused (HTTP \(answer.status) \(status)): \(detail)"
            switch answer.status {
            case 403, 404:
                message += " — the credentials of \(path) (source_credentials) must hold roles/iam.serviceAccountTokenCreator on "
                    + "\(impersonated.target), and the account must exist"
            case 401:
                message += " — the token of \(path)'s source_credentials was refused: log in again "
                    + "(`gcloud auth application-default login --impersonate-service-account=\(impersonated.target)`)"
            default: break
            }
            throw refusal(answer, message: message, code: status)
        }
        guard let value = object?["accessToken"] as? String, !value.isEmpty else {
            throw DestinationError.blocked("\(context) answered without an accessToken (is it IAM's generateAccessToken?)", code: "token-response")
        }
        let secret = Secret(value)
        // `expireTime` is RFC 3339 (UTC, with or without fractions of a second); an hour when it cannot be read.
        var lifetime: Double = 3600
        if let text = object?["expireTime"] as? String {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let plain = ISO8601DateFormatter()
            if let expiry = formatter.date(from: text) ?? plain.date(from: text) { lifetime = max(0, expiry.timeIntervalSince(issuedAt)) }
        }
        return AccessToken(value: secret, lifetime: lifetime, issuedAt: issuedAt)
    }

    /// How long a machine off Google Cloud waits for the metadata server's address before it gives up.
    static let metadataConnectTimeout: Duration = .seconds(2)

    static func metadataURL(base: String, scope: String) -> String {
        base + "/computeMetadata/v1/instance/service-accounts/default/token?scopes=" + OAuthTokenProvider.formEncode(scope)
    }

    private static func metadataToken(
        base: String, lookedAt: [String], scope: String, transport: HTTPTransport, timeout: Duration, issuedAt: Date
    ) async throws -> AccessToken {
        let context = "GCE metadata server \(base)"
        let answer: HTTPAnswer
        do {
            answer = try await transport.send(
                method: .GET, url: metadataURL(base: base, scope: scope), headers: [("Metadata-Flavor", "Google")], timeout: timeout, maxBody: 1 << 20)
        } catch let error as TransportError {
            guard error.phase == .connect else { throw error.destinationError(context) }
            throw DestinationError.unavailable(
                "no Google credentials: " + lookedAt.joined(separator: "; ") + "; and the GCE metadata server at \(base) cannot be "
                    + "reached (\(error.underlying)). Not on Google Cloud? Set credentials_file or GOOGLE_APPLICATION_CREDENTIALS, "
                    + "or run `gcloud auth application-default login`; NO_GCE_CHECK=true skips the metadata server",
                code: "unreachable")
        }
        guard answer.headers.first(name: "metadata-flavor")?.lowercased() == "google" else {
            throw DestinationError.blocked(
                "\(context) answered HTTP \(answer.status) without `Metadata-Flavor: Google`: it is not Google's metadata server "
                    + "(set GCE_METADATA_HOST, or NO_GCE_CHECK=true off Google Cloud)",
                code: "metadata-flavor")
        }
        return try token(from: answer, context: context, issuedAt: issuedAt) { _ in
            answer.status == 404 ? "this instance has no service account (or none with the Sheets scope)" : nil
        }
    }

    private static func post(form: String, to url: String, transport: HTTPTransport, timeout: Duration) async throws -> HTTPAnswer {
        do {
            return try await transport.send(
                method: .POST, url: url, headers: [("content-type", "application/x-www-form-urlencoded")], body: Array(form.utf8), timeout: timeout)
        } catch let error as TransportError {
            throw error.destinationError("token exchange")
        }
    }

    /// What a token endpoint's (or IAM's) refusal means for the destination: 429, or 503 with Retry-After, throttles
    /// it; 408 and other 5xx are retried; anything else blocks it until its credentials change.
    static func refusal(_ answer: HTTPAnswer, message: String, code: String) -> DestinationError {
        let after = SheetsErrorMapper.retryAfter(answer.headers)
        switch answer.status {
        case 429: return .throttled(message, code: code, after: after)
        case 503 where after != nil: return .throttled(message, code: code, after: after)
        case 408, 500...599: return .retryable(message, code: code, after: after)
        default: return .blocked(message, code: code)
        }
    }

    /// The access token of a token endpoint's answer (`access_token`, `expires_in`), or its refusal classified.
    /// `hint` adds a sentence for an OAuth error code.
    static func token(
        from answer: HTTPAnswer, context: String, issuedAt: Date, hint: (String) -> String?
    ) throws -> AccessToken {
        let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any]
        guard answer.status == 200 else {
            let code = (object?["error"] as? String).map { Redactor.shared.snippet($0, limit: 64) } ?? "http-\(answer.status)"
            let detail = Redactor.shared.snippet(object?["error_description"] as? String ?? answer.text)
            var message = "\(context) refused (HTTP \(answer.status) \(code)): \(detail)"
            if let hint = hint(code) { message += " — " + hint }
            throw refusal(answer, message: message, code: code)
        }
        guard let value = object?["access_token"] as? String, !value.isEmpty else {
            throw DestinationError.blocked(
                "\(context) answered without an access_token (is it an OAuth2 token endpoint?)", code: "token-response")
        }
        let secret = Secret(value)
        let lifetime = (object?["expires_in"] as? NSNumber)?.doubleValue ?? 3600
        return AccessToken(value: secret, lifetime: lifetime, issuedAt: issuedAt)
    }
}
