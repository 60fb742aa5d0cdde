import Foundation
import SyncgateCore
import SyncgateNetwork

/// The `s3` destination's keys in `plugins.yaml` (snake_case). Credentials left out here come from the standard
/// AWS environment variables (see ``S3Settings``).
public struct S3Config: Decodable, Sendable {
    public var endpoint: String?
    public var region: String?
    public var bucket: String
    public var prefix: String
    public var pathStyle: Bool?
    public var accessKeyID: Secret?
    public var secretAccessKey: Secret?
    public var sessionToken: Secret?
    /// `profile`: the shared-config profile (else `AWS_PROFILE`, else `default`).
    public var profile: String?
    public var multipart: S3MultipartConfig
    public var storageClass: String?
    /// `content_types`, `cache_control`, `sse`, `sse_kms_key_id`, `tags`, `acl`.
    public var objects: S3ObjectSettings
    /// `existing: ledger | check`.
    public var existing: S3Settings.Existing
    /// `request_timeout`: how long a request may wait for an answer or stall (see ``S3Settings/requestTimeout``).
    public var requestTimeout: Duration?
    /// `abort_incomplete_after`: multipart uploads left open longer are aborted (nil: never, `off`).
    public var abortIncompleteAfter: Duration? = S3Settings.defaultAbortIncompleteAfter
    /// `proxy` and `ca_file` (docs/network.md).
    public var network: NetworkConfig

    enum CodingKeys: String, CodingKey {
        case endpoint, region, bucket, prefix
        case pathStyle = "path_style"
        case accessKeyID = "access_key_id"
        case secretAccessKey = "secret_access_key"
        case sessionToken = "session_token"
        case profile
        case accessKeyIDFile = "access_key_id_file"
        case secretAccessKeyFile = "secret_access_key_file"
        case sessionTokenFile = "session_token_file"
        case multipart
        case storageClass = "storage_class"
        case requestTimeout = "request_timeout"
        case existing
        case abortIncompleteAfter = "abort_incomplete_after"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        endpoint = try c.decodeIfPresent(String.self, forKey: .endpoint)
        if let endpoint {
            guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
                let host = url.host, !host.isEmpty
            else {
                throw ConfigValueError("'\(endpoint)' is not an http:// or https:// URL", key: CodingKeys.endpoint)
            }
            guard url.path.isEmpty || url.path == "/", url.query == nil else {
                throw ConfigValueError("must be a scheme, host and port only (no path or query)", key: CodingKeys.endpoint)
            }
        }
        region = try c.decodeIfPresent(String.self, forKey: .region)
        if let region, region.isEmpty || region.contains(where: { $0 == "/" || $0.isWhitespace }) {
            throw ConfigValueError("'\(region)' is not a region name", key: CodingKeys.region)
        }
        bucket = try c.decode(String.self, forKey: .bucket)
        guard !bucket.isEmpty, !bucket.contains("/"), bucket.utf8.count <= 255 else {
            throw ConfigValueError("must be a bucket name (not empty, no '/')", key: CodingKeys.bucket)
        }
        prefix = try c.decodeIfPresent(String.self, forKey: .prefix) ?? ""
        if prefix.hasPrefix("/") {
            throw ConfigValueError("must not start with '/' (S3 keys are relative to the bucket)", key: CodingKeys.prefix)
        }
        if prefix.utf8.count > 512 {
            throw ConfigValueError("is longer than 512 bytes", key: CodingKeys.prefix)
        }
        pathStyle = try c.decodeIfPresent(Bool.self, forKey: .pathStyle)
        accessKeyID = try c.decodeSecretIfPresent(.accessKeyID, orFile: .accessKeyIDFile)
        secretAccessKey = try c.decodeSecretIfPresent(.secretAccessKey, orFile: .secretAccessKeyFile)
        sessionToken = try c.decodeSecretIfPresent(.sessionToken, orFile: .sessionTokenFile)
        profile = try c.decodeIfPresent(String.self, forKey: .profile)
        if let profile, profile.isEmpty || profile.contains(where: { $0.isWhitespace || $0 == "]" }) {
            throw ConfigValueError("'\(profile)' is not a profile name", key: CodingKeys.profile)
        }
        multipart = try c.decodeIfPresent(S3MultipartConfig.self, forKey: .multipart) ?? S3MultipartConfig()
        storageClass = try c.decodeIfPresent(String.self, forKey: .storageClass)
        if let storageClass, storageClass.isEmpty || !storageClass.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) {
            throw ConfigValueError("'\(storageClass)' is not a storage class (e.g. STANDARD, STANDARD_IA)", key: CodingKeys.storageClass)
        }
        objects = try S3ObjectSettings(from: decoder)
        network = try NetworkConfig(from: decoder)
        let existingText = try c.decodeIfPresent(String.self, forKey: .existing) ?? "ledger"
        guard let existing = S3Settings.Existing(rawValue: existingText) else {
            throw ConfigValueError("'\(existingText)' is not ledger or check", key: CodingKeys.existing)
        }
        self.existing = existing
        if let value = try c.decodeIfPresent(ConfigDuration.self, forKey: .requestTimeout) {
            guard value.duration >= .milliseconds(100), value.duration <= .seconds(3600) else {
                throw ConfigValueError("must be between 100ms and 1h", key: CodingKeys.requestTimeout)
            }
            requestTimeout = value.duration
        }
        if let text = try c.decodeIfPresent(String.self, forKey: .abortIncompleteAfter) {
            if text == "off" {
                abortIncompleteAfter = nil
            } else if let value = ConfigDuration.parse(text), value.duration >= .seconds(1) {
                abortIncompleteAfter = value.duration
            } else {
                throw ConfigValueError("'\(text)' is not a duration of 1s or more, or off", key: CodingKeys.abortIncompleteAfter)
            }
        }
    }

    /// Checks what concerns several keys together, once every key is read (so that a misspelt key is reported as
    /// unknown rather than as the value it left out): returns the key at fault and why, or nil.
    func crossCheck() -> (key: String, message: String)? {
        if (accessKeyID == nil) != (secretAccessKey == nil) {
            return (accessKeyID == nil ? CodingKeys.accessKeyID.stringValue : CodingKeys.secretAccessKey.stringValue,
                    "access_key_id and secret_access_key go together: set both, or neither to use the AWS environment variables")
        }
        return nil
    }
}
