import SyncgateCore

/// AWS credentials. Every part is a ``Secret``: printed as `<redacted>` and scrubbed from any text that leaves
/// the process.
public struct SigV4Credentials: Sendable, Hashable {
    public var accessKeyID: Secret
    public var secretAccessKey: Secret
    public var sessionToken: Secret?

    public init(accessKeyID: Secret, secretAccessKey: Secret, sessionToken: Secret? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.init(
            accessKeyID: Secret(accessKeyID), secretAccessKey: Secret(secretAccessKey),
            sessionToken: sessionToken.map(Secret.init))
    }
}
