import Foundation
import SyncgateCore

/// A Google credentials JSON file, read as Google's client libraries read one: its `type` decides the flow.
/// `service_account` (a key from the Cloud console: the JWT-bearer grant), `authorized_user` (gcloud's
/// application-default file: the refresh-token grant) and `impersonated_service_account` (either of those acting as
/// a service account through IAM, ``ImpersonatedCredentials``) are supported; `external_account` (workload identity
/// federation), `external_account_authorized_user` and `gdch_service_account` are refused with a message saying so. A file without `type` that holds a private key is taken as a service-account
/// key, as earlier syncgate versions took it.
///
/// Errors name the file and the field, never a value; they block the destination (its credentials are unusable
/// until the file changes).
enum GoogleCredentialsFile: Sendable {
    case serviceAccount(ServiceAccountKey)
    case authorizedUser(AuthorizedUserCredentials)
    indirect case impersonated(ImpersonatedCredentials)

    /// A credentials file is a few kilobytes; anything larger than this is not one (and is not read whole).
    static let maximumFileSize = 1 << 20

    /// The types Google's libraries know that syncgate does not handle yet.
    static let unsupportedTypes = [
        "external_account", "external_account_authorized_user", "gdch_service_account",
    ]

    init(contentsOf path: String) throws {
        try self.init(json: try GoogleCredentialsFile.contents(of: path), source: path)
    }

    init(json data: Data, source: String) throws {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw DestinationError.blocked("\(source) is not JSON (expected a Google credentials file)", code: "credentials")
        }
        guard let fields = object as? [String: Any] else {
            throw DestinationError.blocked("\(source) is not a JSON object (expected a Google credentials file)", code: "credentials")
        }
        switch fields["type"] as? String {
        case "service_account":
            self = .serviceAccount(try ServiceAccountKey(json: data, source: source))
        case nil where fields["private_key"] != nil:
            self = .serviceAccount(try ServiceAccountKey(json: data, source: source))
        case "authorized_user":
            self = .authorizedUser(try AuthorizedUserCredentials(fields: fields, source: source))
        case "impersonated_service_account":
            self = .impersonated(try ImpersonatedCredentials(fields: fields, source: source))
        case let type? where GoogleCredentialsFile.unsupportedTypes.contains(type):
            throw DestinationError.blocked(
                "\(source) holds '\(type)' credentials, which syncgate does not support yet: use a service-account key "
                    + "(type service_account) or gcloud's application-default login (type authorized_user, or "
                    + "impersonated_service_account with --impersonate-service-account)",
                code: "credentials")
        case let type?:
            throw DestinationError.blocked(
                "\(source) has an unknown credentials type '\(Redactor.shared.snippet(type, limit: 40))' (expected service_account, authorized_user or impersonated_service_account)",
                code: "credentials")
        case nil:
            throw DestinationError.blocked(
                "\(source) has no \"type\" (expected a service-account key or gcloud's application-default credentials)", code: "credentials")
        }
    }

    /// The file's `type`, for `validate`.
    var type: String {
        switch self {
        case .serviceAccount: "service_account"
        case .authorizedUser: "authorized_user"
        case .impersonated: "impersonated_service_account"
        }
    }

    /// The project that Google bills for API requests made with user credentials (`quota_project_id`, sent as
    /// `x-goog-user-project`); nil for a service account, whose own project is billed.
    var quotaProject: String? {
        switch self {
        case .serviceAccount: nil
        case .authorizedUser(let user): user.quotaProjectID
        case .impersonated(let impersonated): impersonated.quotaProjectID
        }
    }

    /// The bytes of the file at `path`, at most ``maximumFileSize``.
    static func contents(of path: String) throws -> Data {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
            throw DestinationError.blocked("the credentials file \(path) is a folder", code: "credentials")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            let reason = String(cString: strerror(errno))
            throw DestinationError.blocked("cannot read the credentials file \(path): \(reason)", code: "credentials")
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: maximumFileSize + 1) ?? Data()
        } catch {
            throw DestinationError.blocked("cannot read the credentials file \(path): \((error as NSError).localizedDescription)", code: "credentials")
        }
        guard data.count <= maximumFileSize else {
            throw DestinationError.blocked("\(path) is larger than 1 MiB: not a Google credentials file", code: "credentials")
        }
        return data
    }
}
