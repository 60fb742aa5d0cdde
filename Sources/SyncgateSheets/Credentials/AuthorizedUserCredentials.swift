import Foundation
import SyncgateCore

/// A user's OAuth2 credentials (`"type": "authorized_user"`), as `gcloud auth application-default login` writes
/// them: an OAuth client (`client_id`, `client_secret`) and the user's `refresh_token`, exchanged at `token_uri`
/// (default Google's) for access tokens with the refresh-token grant (RFC 6749 §6). The client secret and the
/// refresh token are held as ``Secret``s, registered before anything can quote them.
struct AuthorizedUserCredentials: Sendable {
    static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    var clientID: String
    var clientSecret: Secret
    var refreshToken: Secret
    var tokenURI: String
    /// The project billed for the user's API requests (`x-goog-user-project`), when the file names one.
    var quotaProjectID: String?

    init(fields: [String: Any], source: String) throws {
        // Register the secrets before anything else can quote them.
        let secret = (fields["client_secret"] as? String).flatMap { $0.isEmpty ? nil : Secret($0) }
        let refresh = (fields["refresh_token"] as? String).flatMap { $0.isEmpty ? nil : Secret($0) }
        guard let refresh else {
            throw DestinationError.blocked(
                "\(source) has no refresh_token (run `gcloud auth application-default login` again)", code: "credentials")
        }
        guard let secret else { throw DestinationError.blocked("\(source) has no client_secret", code: "credentials") }
        guard let id = fields["client_id"] as? String, !id.isEmpty else {
            throw DestinationError.blocked("\(source) has no client_id", code: "credentials")
        }
        clientID = id
        clientSecret = secret
        refreshToken = refresh
        tokenURI = (fields["token_uri"] as? String).flatMap { $0.isEmpty ? nil : $0 } ?? AuthorizedUserCredentials.defaultTokenURI
        quotaProjectID = (fields["quota_project_id"] as? String).flatMap { $0.isEmpty ? nil : $0 }
        guard let url = URL(string: tokenURI), url.scheme == "https" || url.scheme == "http", url.host != nil else {
            throw DestinationError.blocked("\(source) has a token_uri that is not an http(s) URL", code: "credentials")
        }
    }

    /// The refresh-token grant's form (`scope` asks for the Sheets scope, as Google's libraries ask for theirs).
    func refreshForm(scope: String) -> String {
        [
            ("grant_type", "refresh_token"), ("client_id", clientID), ("client_secret", clientSecret.reveal()),
            ("refresh_token", refreshToken.reveal()), ("scope", scope),
        ].map { OAuthTokenProvider.formEncode($0.0) + "=" + OAuthTokenProvider.formEncode($0.1) }.joined(separator: "&")
    }
}
