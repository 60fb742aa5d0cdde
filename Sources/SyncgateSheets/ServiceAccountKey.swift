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
        try self.init(json: try ServiceAccountKey.contents(of: path), source: path)
    }

    /// A key file is a few kilobytes; anything larger than this is not one (and is not read whole).
    static let maximumFileSize = 1 << 20

    /// The bytes of the key file at `path`, at most ``maximumFileSize``.
    static func contents(of path: String) throws -> Data {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            let reason = String(cString: strerror(errno))
            throw DestinationError.blocked("cannot read the service-account key file \(path): \(reason)", code: "credentials")
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: maximumFileSize + 1) ?? Data()
        } catch {
            throw DestinationError.blocked("cannot read the service-account key file \(path): \((error as NSError).localizedDescription)", code: "credentials")
        }
        guard data.count <= maximumFileSize else {
            throw DestinationError.blocked("\(path) is larger than 1 MiB: not a service-account key file", code: "credentials")
        }
        return data
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
        // Register the secret before anything else can quote it.
        if let pem = fields["private_key"] as? String, !pem.isEmpty {
            privateKey = Secret(pem)
        } else {
            throw DestinationError.blocked("\(source) has no private_key (is it a service-account key?)", code: "credentials")
        }
        if let type = fields["type"] as? String, type != "service_account" {
            throw DestinationError.blocked("\(source) is a '\(type)' credential; a service-account key is needed", code: "credentials")
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
