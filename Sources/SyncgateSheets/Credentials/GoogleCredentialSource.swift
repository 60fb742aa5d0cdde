import Crypto
import Foundation

/// Where a Sheets API destination's Google credentials come from, as ``GoogleCredentialChain`` found them. Its
/// description names the source (a file and which link of the chain named it, or the metadata server), never what
/// the credentials are; `syncgate validate` prints it.
enum GoogleCredentialSource: Sendable, Equatable, CustomStringConvertible {
    /// Which link of the chain named a credentials file.
    enum Origin: String, Sendable, Equatable {
        /// The destination's `credentials_file`.
        case config = "credentials_file"
        /// `GOOGLE_APPLICATION_CREDENTIALS`.
        case environment = "GOOGLE_APPLICATION_CREDENTIALS"
        /// gcloud's application-default file (`gcloud auth application-default login`).
        case gcloud = "gcloud application-default login"
    }

    /// A credentials JSON file: its `type` decides the flow (``GoogleCredentialsFile``).
    case file(path: String, origin: Origin)
    /// The GCE metadata server (`baseURL` is `http://HOST`), asked for the instance's default service account's
    /// token. `lookedAt` says what the chain found nothing in before it, for the error when the server does not answer.
    case metadataServer(baseURL: String, lookedAt: [String])

    var description: String {
        switch self {
        case .file(let path, let origin): "the credentials file \(path) (\(origin.rawValue))"
        case .metadataServer(let base, _): "the GCE metadata server at \(base) (the instance's default service account)"
        }
    }

    /// The description with the file's `type` (what `validate` prints once it has read the file).
    func description(type: String) -> String {
        switch self {
        case .file(let path, let origin): "\(type) from \(path) (\(origin.rawValue))"
        case .metadataServer: description
        }
    }

    /// The settings fingerprint: the hex SHA-256 of a credentials file's content (`unreadable` when it cannot be
    /// read), so that a destination blocked for its credentials is tried again once the file changes; for the
    /// metadata server, of its address.
    var fingerprint: String {
        switch self {
        case .file(let path, _):
            guard let data = try? GoogleCredentialsFile.contents(of: path) else { return "unreadable" }
            return GoogleCredentialSource.hex(SHA256.hash(data: data))
        case .metadataServer(let base, _):
            return GoogleCredentialSource.hex(SHA256.hash(data: Data("metadata-server \(base)".utf8)))
        }
    }

    static func hex(_ digest: SHA256.Digest) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }
}
