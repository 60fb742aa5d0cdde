import Foundation
import SyncgateCore

/// Finds a destination's credentials in the AWS SDKs' order: the config's keys; the environment's keys; web
/// identity (`AWS_WEB_IDENTITY_TOKEN_FILE` with `AWS_ROLE_ARN`); the profile (`profile:`, else `AWS_PROFILE`, else
/// `default`) in the shared files, with its keys, `role_arn` (with `source_profile`, `credential_source` or
/// `web_identity_token_file`) or `credential_process`; the container endpoint (`AWS_CONTAINER_CREDENTIALS_FULL_URI`
/// / `_RELATIVE_URI`); EC2 instance metadata (unless `AWS_EC2_METADATA_DISABLED=true`). Only files and the
/// environment are read here; a source that must be asked (STS, a process, an endpoint) is asked at the first
/// request (``AWSCredentialProvider``).
enum AWSCredentialChain {
    /// A mistake in what the chain read: the config key it belongs to, and why.
    struct Failure: Error, CustomStringConvertible {
        var key: String
        var description: String
    }

    static func resolve(
        keys: SigV4Credentials?, profile configuredProfile: String?, region: String, environment: [String: String]
    ) throws -> AWSCredentialSource {
        func env(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        if let keys { return .config(keys) }
        if let id = env("AWS_ACCESS_KEY_ID"), let secret = env("AWS_SECRET_ACCESS_KEY") {
            return .environment(SigV4Credentials(accessKeyID: Secret(id), secretAccessKey: Secret(secret), sessionToken: env("AWS_SESSION_TOKEN").map(Secret.init)))
        }
        let sts = stsOrigin(region: region, environment: environment)
        if let tokenFile = env("AWS_WEB_IDENTITY_TOKEN_FILE"), let role = env("AWS_ROLE_ARN") {
            return .webIdentity(roleARN: role, tokenFile: tokenFile, sessionName: env("AWS_ROLE_SESSION_NAME") ?? defaultSessionName, origin: sts)
        }
        let shared = AWSSharedConfig.load(environment: environment)
        let named = configuredProfile ?? env("AWS_PROFILE")
        let profile = named ?? "default"
        if let source = try profileSource(profile, shared: shared, environment: environment, sts: sts, visited: []) {
            return source
        }
        if let named {
            let files = shared.files.isEmpty ? "no shared config or credentials file was found" : "read: " + shared.files.joined(separator: ", ")
            throw Failure(key: configuredProfile != nil ? "profile" : "access_key_id",
                          description: "profile '\(named)' has no credentials (\(files))")
        }
        if let container = containerSource(environment) { return container }
        if env("AWS_EC2_METADATA_DISABLED")?.lowercased() != "true" {
            return .instanceMetadata(endpoint: env("AWS_EC2_METADATA_SERVICE_ENDPOINT") ?? "http://169.254.169.254")
        }
        throw Failure(key: "access_key_id", description: "no credentials: set access_key_id and secret_access_key, or AWS_ACCESS_KEY_ID and "
            + "AWS_SECRET_ACCESS_KEY, or a profile (profile:, AWS_PROFILE) in ~/.aws/credentials or ~/.aws/config, or web identity "
            + "(AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN); container and instance credentials are off (AWS_EC2_METADATA_DISABLED)")
    }

    static let defaultSessionName = "syncgate"

    /// STS's origin: `AWS_ENDPOINT_URL_STS`, else `AWS_ENDPOINT_URL`, else the region's endpoint.
    static func stsOrigin(region: String, environment: [String: String]) -> String {
        for name in ["AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL"] {
            if let value = environment[name], !value.isEmpty { return value.hasSuffix("/") ? String(value.dropLast()) : value }
        }
        return "https://sts.\(region).amazonaws.com"
    }

    /// A profile's source, or nil when the profile is not there or names no credentials.
    static func profileSource(
        _ name: String, shared: AWSSharedConfig, environment: [String: String], sts: String, visited: Set<String>
    ) throws -> AWSCredentialSource? {
        guard let settings = shared.profiles[name] else { return nil }
        func keys() -> AWSCredentialSource? {
            guard let id = settings["aws_access_key_id"], let secret = settings["aws_secret_access_key"] else { return nil }
            return .profileKeys(profile: name, SigV4Credentials(
                accessKeyID: Secret(id), secretAccessKey: Secret(secret), sessionToken: settings["aws_session_token"].map(Secret.init)))
        }
        if let role = settings["role_arn"] {
            let session = settings["role_session_name"] ?? defaultSessionName
            if let file = settings["web_identity_token_file"] {
                return .webIdentity(roleARN: role, tokenFile: AWSSharedConfig.expand(file, home: environment["HOME"]), sessionName: session, origin: sts)
            }
            let source: AWSCredentialSource
            if let sourceName = settings["source_profile"] {
                if sourceName == name, let own = keys() {
                    source = own
                } else {
                    guard !visited.contains(sourceName) else {
                        throw Failure(key: "profile", description: "profile '\(name)': source_profile goes round (\((visited + [name]).sorted().joined(separator: ", ")))")
                    }
                    guard let found = try profileSource(sourceName, shared: shared, environment: environment, sts: sts, visited: visited.union([name])) else {
                        throw Failure(key: "profile", description: "profile '\(name)': its source_profile '\(sourceName)' has no credentials")
                    }
                    source = found
                }
            } else if let kind = settings["credential_source"] {
                switch kind {
                case "Environment":
                    guard let id = environment["AWS_ACCESS_KEY_ID"], let secret = environment["AWS_SECRET_ACCESS_KEY"] else {
                        throw Failure(key: "profile", description: "profile '\(name)': credential_source Environment, but AWS_ACCESS_KEY_ID is not set")
                    }
                    source = .environment(SigV4Credentials(accessKeyID: id, secretAccessKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"]))
                case "Ec2InstanceMetadata":
                    source = .instanceMetadata(endpoint: environment["AWS_EC2_METADATA_SERVICE_ENDPOINT"] ?? "http://169.254.169.254")
                case "EcsContainer":
                    guard let container = containerSource(environment) else {
                        throw Failure(key: "profile", description: "profile '\(name)': credential_source EcsContainer, but AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI are not set")
                    }
                    source = container
                default:
                    throw Failure(key: "profile", description: "profile '\(name)': credential_source '\(kind)' is not Environment, Ec2InstanceMetadata or EcsContainer")
                }
            } else {
                throw Failure(key: "profile", description: "profile '\(name)': role_arn needs source_profile, credential_source or web_identity_token_file")
            }
            return .assumeRole(profile: name, roleARN: role, sessionName: session, externalID: settings["external_id"], source: source, origin: sts)
        }
        if let own = keys() { return own }
        if let command = settings["credential_process"], !command.isEmpty { return .process(profile: name, command: command) }
        return nil
    }

    /// The container credentials endpoint, when the environment names one.
    static func containerSource(_ environment: [String: String]) -> AWSCredentialSource? {
        func env(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let token = env("AWS_CONTAINER_AUTHORIZATION_TOKEN").map(Secret.init)
        let tokenFile = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")
        if let relative = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
            return .container(url: "http://169.254.170.2" + (relative.hasPrefix("/") ? relative : "/" + relative), token: token, tokenFile: tokenFile)
        }
        if let full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI") { return .container(url: full, token: token, tokenFile: tokenFile) }
        return nil
    }
}
