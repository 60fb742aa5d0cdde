import Crypto
import Foundation
import SyncgateCore
import SyncgateNetwork

/// An `s3` destination's resolved settings: where to connect, how to address the bucket, and the credentials
/// (from the config, else from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`).
public struct S3Settings: Sendable {
    public var scheme: String
    public var host: String
    public var port: Int?
    public var region: String
    public var bucket: String
    public var prefix: String
    public var pathStyle: Bool
    /// Where the credentials come from (``AWSCredentialChain``).
    var credentialSource: AWSCredentialSource
    /// The credentials when they are fixed keys (the config's, the environment's, a profile's); nil when they are
    /// fetched (STS, a process, the container endpoint, instance metadata).
    public var credentials: SigV4Credentials? { credentialSource.fixed }
    /// Where the credentials come from, for `validate` (never the credentials themselves).
    public var credentialsDescription: String { credentialSource.description }
    public var multipart: S3MultipartConfig
    public var storageClass: String?
    /// The headers every stored object carries (``S3ObjectSettings``).
    public var objects: S3ObjectSettings
    /// Where a run learns that a file is already in the bucket: `ledger` (only the ledger, the default) or `check`
    /// (a file the ledger does not know is looked for in the bucket first, see ``S3ExistingObjects``).
    public var existing: Existing

    public enum Existing: String, Sendable, Hashable {
        case ledger, check
    }
    /// How long one request may go without progress: the answer to a request must begin within it, and no upload
    /// or download may stall longer. Requests without a file body (HEAD, ListObjectsV2, DeleteObjects,
    /// CreateMultipartUpload, AbortMultipartUpload) must also end within it; a file body's request is bounded in
    /// total by the core's `attempt_timeout`, and CompleteMultipartUpload (which S3 may take minutes to answer,
    /// sending blanks meanwhile) by ``completeTimeout``.
    public var requestTimeout: Duration
    /// The proxy of the endpoint (and of STS) and the CAs trusted (`proxy`, `ca_file`, the environment:
    /// docs/network.md).
    public var network: NetworkSettings

    /// Multipart uploads left open longer than this are aborted (nil: never), by ``S3Destination/abortStaleUploads()``.
    public var abortIncompleteAfter: Duration? = S3Settings.defaultAbortIncompleteAfter
    /// Seven days, as the AWS documentation's example lifecycle rule `AbortIncompleteMultipartUpload`.
    public static let defaultAbortIncompleteAfter: Duration? = .seconds(7 * 86400)

    /// The default of ``requestTimeout``.
    public static let defaultRequestTimeout: Duration = .seconds(60)
    /// The longest a CompleteMultipartUpload may take in total.
    public static let completeTimeout: Duration = .seconds(900)

    /// The reason credentials could not be found (the factory turns it into a located config error).
    public struct MissingCredentials: Error, CustomStringConvertible {
        /// The config key the mistake belongs to.
        public var key: String
        public var message: String
        public var description: String { message }
    }

    public init(
        endpoint: URL, region: String, bucket: String, prefix: String = "", pathStyle: Bool = true,
        credentials: SigV4Credentials, multipart: S3MultipartConfig = S3MultipartConfig(), storageClass: String? = nil,
        objects: S3ObjectSettings = S3ObjectSettings(), existing: Existing = .ledger,
        requestTimeout: Duration = S3Settings.defaultRequestTimeout, network: NetworkSettings = .direct
    ) {
        scheme = endpoint.scheme?.lowercased() ?? "https"
        host = endpoint.host ?? "localhost"
        port = endpoint.port
        self.region = region
        self.bucket = bucket
        self.prefix = prefix
        self.pathStyle = pathStyle
        self.credentialSource = .config(credentials)
        self.multipart = multipart
        self.storageClass = storageClass
        self.objects = objects
        self.existing = existing
        self.requestTimeout = requestTimeout
        self.network = network
    }

    /// `requireCredentials: false` (a command that reads only the ledger) accepts a config whose credentials cannot
    /// be found; asking for them then blocks the destination with the reason. Throws ``MissingCredentials`` and, for
    /// `proxy` / `ca_file` or the variables they override, a `NetworkSettingsError`. `resolvePath` resolves `ca_file`
    /// against the config file's folder.
    public init(
        config: S3Config, environment: [String: String], requireCredentials: Bool = true, resolvePath: (String) -> String = { $0 }
    ) throws {
        let region = config.region ?? environment["AWS_REGION"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["AWS_DEFAULT_REGION"].flatMap { $0.isEmpty ? nil : $0 } ?? "us-east-1"
        let fromEnvironment = ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
        let endpoint = URL(string: config.endpoint ?? fromEnvironment ?? "https://s3.\(region).amazonaws.com")
            ?? URL(string: "https://s3.\(region).amazonaws.com")!
        let keys = config.accessKeyID.flatMap { id in
            config.secretAccessKey.map { SigV4Credentials(accessKeyID: id, secretAccessKey: $0, sessionToken: config.sessionToken) }
        }
        let source: AWSCredentialSource
        do {
            source = try AWSCredentialChain.resolve(keys: keys, profile: config.profile, region: region, environment: environment)
        } catch let failure as AWSCredentialChain.Failure {
            guard !requireCredentials else { throw MissingCredentials(key: failure.key, message: failure.description) }
            source = .missing(reason: failure.description)
        }
        let host = endpoint.host ?? ""
        let isAWS = host.hasSuffix(".amazonaws.com")
        // Virtual-hosted style needs a DNS-safe bucket name (dots break TLS wildcard certificates).
        let dnsSafe = config.bucket.allSatisfy { ($0.isLowercase && $0.isASCII) || $0.isNumber || $0 == "-" }
        let pathStyle = config.pathStyle ?? !isAWS || !dnsSafe
        self.init(
            endpoint: endpoint, region: region, bucket: config.bucket, prefix: config.prefix,
            pathStyle: pathStyle || !dnsSafe, credentials: SigV4Credentials(accessKeyID: "", secretAccessKey: ""), multipart: config.multipart,
            storageClass: config.storageClass, objects: config.objects, existing: config.existing, requestTimeout: config.requestTimeout ?? S3Settings.defaultRequestTimeout,
            network: try NetworkSettings.resolve(
                config.network, caFile: config.network.caFile.map(resolvePath), environment: environment, awsCABundle: true))
        credentialSource = source
        abortIncompleteAfter = config.abortIncompleteAfter
    }

    /// The Host header: the endpoint's host (prefixed with the bucket in virtual-hosted style) and its port when
    /// it is not the scheme's default.
    public var hostHeader: String {
        var text = pathStyle ? host : "\(bucket).\(host)"
        if host.contains(":") { text = "[\(text)]" }
        if let port, !(scheme == "http" && port == 80), !(scheme == "https" && port == 443) { text += ":\(port)" }
        return text
    }

    /// The host connections are made to: the endpoint's, prefixed with the bucket in virtual-hosted style.
    public var connectionHost: String { pathStyle ? host : "\(bucket).\(host)" }

    /// `scheme://host[:port]` of requests.
    public var origin: String { "\(scheme)://\(hostHeader)" }

    /// The encoded path of an object (or of the bucket when `key` is nil).
    public func path(key: String?) -> String {
        let bucketPart: String? = pathStyle ? bucket : nil
        guard let key else { return bucketPart.map { "/" + S3URIEncoding.encode($0) } ?? "/" }
        return S3URIEncoding.objectPath(bucket: bucketPart, key: key)
    }

    /// A hex SHA-256 over what the config text may not show: the resolved credentials (from the config or the
    /// environment) and the endpoint and region they were resolved for, and the network settings from the
    /// environment (a proxy, `NO_PROXY`, the CA bundle's content). It changes when any of them changes, and says
    /// nothing about the secrets themselves (each part is length-prefixed, so parts cannot run into each other).
    public var fingerprint: String {
        var hash = SHA256()
        let networkPart = network.fingerprint
        let parts = [
            "s3-settings-v2"] + credentialSource.fingerprintParts + [origin, region,
        ] + (networkPart.isEmpty ? [] : [networkPart])
        for part in parts {
            let bytes = Array(part.utf8)
            hash.update(data: Array(String(bytes.count).utf8) + [0x3A] + bytes)
        }
        return SigV4Signer.hex(Array(hash.finalize()))
    }

    /// `s3://bucket/key`, for messages and receipts.
    public func display(key: String) -> String { "s3://\(bucket)/\(key)" }
}
