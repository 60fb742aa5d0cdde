import SyncgateCore

/// Where a destination's AWS credentials come from, in the order the AWS SDKs look (``AWSCredentialChain``). Its
/// description names the source, never a secret; `validate` prints it.
indirect enum AWSCredentialSource: Sendable, CustomStringConvertible {
    /// Keys written in the config (`access_key_id`, `secret_access_key`, `session_token`).
    case config(SigV4Credentials)
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`.
    case environment(SigV4Credentials)
    /// A profile's `aws_access_key_id` and `aws_secret_access_key`.
    case profileKeys(profile: String, SigV4Credentials)
    /// STS AssumeRoleWithWebIdentity with the OIDC token in `tokenFile` (read again at each renewal).
    case webIdentity(roleARN: String, tokenFile: String, sessionName: String, origin: String)
    /// STS AssumeRole, signed with the credentials of `source`.
    case assumeRole(profile: String, roleARN: String, sessionName: String, externalID: String?, source: AWSCredentialSource, origin: String)
    /// A profile's `credential_process`: a command whose standard output is the credentials as JSON.
    case process(profile: String, command: String)
    /// The container credentials endpoint (ECS, EKS Pod Identity): a GET with an optional authorization token.
    case container(url: String, token: Secret?, tokenFile: String?)
    /// EC2 instance metadata, IMDSv2: a token by PUT, then the role's credentials.
    case instanceMetadata(endpoint: String)
    /// None found, for a command that builds no destination (`status`): why, should one be asked for after all.
    case missing(reason: String)

    var description: String {
        switch self {
        case .config: "the keys in the config"
        case .environment: "the environment (AWS_ACCESS_KEY_ID)"
        case .profileKeys(let profile, _): "profile \(profile) (its keys)"
        case .webIdentity(let role, let file, _, _):
            "web identity: STS AssumeRoleWithWebIdentity for \(role) with the token in \(file)"
        case .assumeRole(let profile, let role, _, _, let source, _): "profile \(profile): STS AssumeRole \(role), signed with \(source)"
        case .process(let profile, _): "profile \(profile): its credential_process"
        case .container(let url, _, _): "the container credentials endpoint \(url)"
        case .instanceMetadata(let endpoint): "EC2 instance metadata (IMDSv2) at \(endpoint)"
        case .missing: "none found"
        }
    }

    /// The credentials when they are known without asking anyone (keys written somewhere).
    var fixed: SigV4Credentials? {
        switch self {
        case .config(let c), .environment(let c), .profileKeys(_, let c): c
        default: nil
        }
    }

    /// What identifies the source for the settings fingerprint: fixed keys themselves (a new key unblocks a
    /// destination), or what names the source (fetched keys change at every renewal).
    var fingerprintParts: [String] {
        if let fixed { return [fixed.accessKeyID.reveal(), fixed.secretAccessKey.reveal(), fixed.sessionToken?.reveal() ?? ""] }
        return [description]
    }
}
