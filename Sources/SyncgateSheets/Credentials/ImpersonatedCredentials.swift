import Foundation
import SyncgateCore

/// Credentials that act as a service account without its key (`"type": "impersonated_service_account"`), as
/// `gcloud auth application-default login --impersonate-service-account=SA` writes them: `source_credentials` (the
/// user's own login, or a service-account key) get a token for IAM, and IAM's `generateAccessToken` at
/// `service_account_impersonation_url` turns it into a token of the target service account, with the Sheets scope
/// (the source needs `roles/iam.serviceAccountTokenCreator` on it). No key of the target is ever on disk.
struct ImpersonatedCredentials: Sendable {
    /// The scope the source's token is asked with: what IAM's Service Account Credentials API accepts.
    static let sourceScope = "https://www.googleapis.com/auth/cloud-platform"

    /// The source's credentials: an `authorized_user` login or a service-account key (never another impersonation).
    var source: GoogleCredentialsFile
    var impersonationURL: String
    /// The chain of service accounts between the source and the target (`delegates`), each as IAM names it.
    var delegates: [String]
    /// The target service account's email (from the URL), for messages.
    var target: String
    /// The project billed for the requests (`quota_project_id`), when the file names one.
    var quotaProjectID: String?

    init(fields: [String: Any], source path: String) throws {
        guard let url = fields["service_account_impersonation_url"] as? String, !url.isEmpty else {
            throw DestinationError.blocked("\(path) has no service_account_impersonation_url", code: "credentials")
        }
        guard let parsed = URL(string: url), parsed.scheme == "https" || parsed.scheme == "http", parsed.host != nil,
            parsed.path.hasSuffix(":generateAccessToken")
        else {
            throw DestinationError.blocked(
                "\(path) has a service_account_impersonation_url that is not an http(s) URL ending in :generateAccessToken", code: "credentials")
        }
        guard let sourceFields = fields["source_credentials"] as? [String: Any] else {
            throw DestinationError.blocked("\(path) has no source_credentials (the credentials that impersonate)", code: "credentials")
        }
        if sourceFields["type"] as? String == "impersonated_service_account" {
            throw DestinationError.blocked("\(path): source_credentials cannot be an impersonation themselves", code: "credentials")
        }
        let sourceData = try JSONSerialization.data(withJSONObject: sourceFields)
        source = try GoogleCredentialsFile(json: sourceData, source: "\(path) (source_credentials)")
        impersonationURL = url
        delegates = (fields["delegates"] as? [Any] ?? []).compactMap { $0 as? String }.filter { !$0.isEmpty }
        // .../serviceAccounts/NAME:generateAccessToken
        let last = parsed.path.split(separator: "/").last.map(String.init) ?? ""
        target = String(last.dropLast(":generateAccessToken".count)).removingPercentEncoding ?? last
        quotaProjectID = (fields["quota_project_id"] as? String).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The body of `generateAccessToken` (IAM Service Account Credentials API v1): the scopes, the delegates, and a
    /// lifetime of an hour (the most allowed without an organisation policy raising it).
    func requestBody(scope: String) -> [UInt8] {
        var object: [String: Any] = ["scope": [scope], "lifetime": "3600s"]
        if !delegates.isEmpty { object["delegates"] = delegates }
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
    }
}
