import Foundation
import SyncgateCore

/// A Google service-account key file (the JSON downloaded from the Cloud console). The private key is held as
/// a ``Secret`` so that it is scrubbed from any text that leaves the process.
public struct ServiceAccountKey: Sendable {
    public var clientEmail: String
    public var privateKeyID: String?
    public var privateKey: Secret
    public var tokenURI: String
    public var projectID: String?

    /// Reads and checks a key file. Errors name the file and the missing field, never a key's content; they block
    /// the destination (its credentials are unusable until the file changes).
    public init(contentsOf path: String) throws {
        try self.init(json: try GoogleCredentialsFile.contents(of: path), source: path)
    }

    public init(json data: Data, source: String = "service-account key") throws {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw DestinationError.blocked("\(source) is not JSON (expected a service-account key file)", code: "credentials")
        }
        guard let fields = object as? [String: Any] else {
            throw DestinationError.blocked("\(source) is not a JSON object (expected a service-account key file)", code: "credentials")
        }
        if let type = fields["type"] as? String, type != "service_account" {
            throw DestinationError.blocked("\(source) is a '\(Redactor.shared.snippet(type, limit: 40))' credential; a service-account key is needed", code: "credentials")
        }
        // Register the secret before anything else can quote it.
        if let pem = fields["private_key"] as? String, !pem.isEmpty {
            privateKey = Secret(pem)
        } else {
            throw DestinationError.blocked("\(source) has no private_key (is it a service-account key?)", code: "credentials")
        }
        guard let email = fields["client_email"] as? String, !email.isEmpty else {
            throw DestinationError.blocked("\(source) has no client_email", code: "credentials")
        }
        clientEmail = email
        privateKeyID = fields["private_key_id"] as? String
        tokenURI = (fields["token_uri"] as? String) ?? "https://oauth2.googleapis.com/token"
        projectID = fields["project_id"] as? String
        guard let url = URL(string: tokenURI), url.scheme == "https" || url.scheme == "http", url.host != nil else {
            throw DestinationError.blocked("\(source) has a token_uri that is not an http(s) URL", code: "credentials")
        }
    }
}
