import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncgateCore
import SyncgateNetwork

/// Asks a source that must be asked for credentials: STS (AssumeRoleWithWebIdentity, AssumeRole), a
/// `credential_process`, the container endpoint, EC2 instance metadata (IMDSv2). A source that cannot be reached
/// makes the destination unavailable (tried again later); one that refuses (a rejected token or role, a failing
/// process) blocks it, as rejected keys do.
///
/// STS is asked through the destination's proxy and trusts its CAs (``NetworkSettings``); the container endpoint and
/// instance metadata, link-local or loopback addresses of the machine itself, are always asked directly.
enum AWSCredentialFetcher {
    struct Fetched: Sendable {
        var credentials: SigV4Credentials
        var expiration: Date?

        func needsRenewal(at now: Date) -> Bool {
            guard let expiration else { return false }
            return expiration.timeIntervalSince(now) < AWSCredentialProvider.refreshWindow
        }
    }

    static func fetch(_ source: AWSCredentialSource, region: String, network: NetworkSettings = .direct) async throws -> Fetched {
        switch source {
        case .config(let c), .environment(let c), .profileKeys(_, let c):
            return Fetched(credentials: c, expiration: nil)
        case .webIdentity(let role, let tokenFile, let session, let origin):
            let token: String
            do {
                token = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            } catch {
                throw DestinationError.blocked("web identity: cannot read the token file \(tokenFile): \(error.localizedDescription)", code: "WebIdentityTokenFile")
            }
            Redactor.shared.register(token)
            let form = [("Action", "AssumeRoleWithWebIdentity"), ("Version", "2011-06-15"), ("RoleArn", role),
                        ("RoleSessionName", session), ("WebIdentityToken", token)]
            return try await sts(origin: origin, form: form, signedWith: nil, region: region, result: "AssumeRoleWithWebIdentityResult",
                                 context: "STS AssumeRoleWithWebIdentity \(role)", network: network)
        case .assumeRole(_, let role, let session, let externalID, let inner, let origin):
            let signing = try await fetch(inner, region: region, network: network).credentials
            var form = [("Action", "AssumeRole"), ("Version", "2011-06-15"), ("RoleArn", role), ("RoleSessionName", session)]
            if let externalID { form.append(("ExternalId", externalID)) }
            return try await sts(origin: origin, form: form, signedWith: signing, region: region, result: "AssumeRoleResult",
                                 context: "STS AssumeRole \(role)", network: network)
        case .process(let profile, let command):
            return try await AWSCredentialProcess.run(command, profile: profile)
        case .container(let url, let token, let tokenFile):
            var headers: [(String, String)] = []
            if let tokenFile {
                guard let text = try? String(contentsOfFile: tokenFile, encoding: .utf8) else {
                    throw DestinationError.blocked("container credentials: cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE \(tokenFile)", code: "ContainerToken")
                }
                let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
                Redactor.shared.register(value)
                headers.append(("Authorization", value))
            } else if let token {
                headers.append(("Authorization", token.reveal()))
            }
            let body = try await request(.GET, url, headers: headers, context: "container credentials \(url)")
            return try credentials(fromJSON: body, context: "container credentials \(url)")
        case .instanceMetadata(let endpoint):
            let base = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
            let context = "EC2 instance metadata \(base)"
            let token = String(decoding: try await request(
                .PUT, base + "/latest/api/token", headers: [("X-aws-ec2-metadata-token-ttl-seconds", "21600")], context: context, timeout: .seconds(2)), as: UTF8.self)
            Redactor.shared.register(token)
            let auth = [("X-aws-ec2-metadata-token", token)]
            let roles = String(decoding: try await request(.GET, base + "/latest/meta-data/iam/security-credentials/", headers: auth, context: context, timeout: .seconds(2)), as: UTF8.self)
            guard let role = roles.split(whereSeparator: \.isNewline).first.map(String.init), !role.isEmpty else {
                throw DestinationError.blocked("\(context): this instance has no IAM role", code: "NoInstanceRole")
            }
            let body = try await request(.GET, base + "/latest/meta-data/iam/security-credentials/" + role, headers: auth, context: context, timeout: .seconds(2))
            return try credentials(fromJSON: body, context: context)
        case .missing(let reason):
            throw DestinationError.blocked(reason, code: "NoCredentials")
        }
    }

    // MARK: STS

    static func sts(
        origin: String, form: [(String, String)], signedWith signing: SigV4Credentials?, region: String, result: String, context: String,
        network: NetworkSettings = .direct
    ) async throws -> Fetched {
        let body = Data(form.map { S3URIEncoding.encode($0.0) + "=" + S3URIEncoding.encode($0.1) }.joined(separator: "&").utf8)
        guard let url = URL(string: origin + "/"), let host = url.host else {
            throw DestinationError.blocked("\(context): '\(origin)' is not a URL", code: "STSEndpoint")
        }
        let hostHeader = url.port.map { "\(host):\($0)" } ?? host
        var headers: [(name: String, value: String)] = [("Host", hostHeader), ("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")]
        if let signing {
            let hash = SigV4Signer.hexSHA256(body)
            headers.append(("x-amz-content-sha256", hash))
            let signature = SigV4Signer(credentials: signing, region: region, service: "sts")
                .sign(SigV4Signer.Request(method: "POST", path: "/", headers: headers, payloadHash: hash), date: Date())
            headers += signature.headers
        }
        let answer = try await request(.POST, origin + "/", headers: headers.filter { $0.name != "Host" }.map { ($0.name, $0.value) },
                                       body: body, context: context, stsErrors: true, network: network)
        guard let root = S3XMLElement.parse(answer), let credentials = root.child(result)?.child("Credentials"),
              let id = credentials.value("AccessKeyId"), let secret = credentials.value("SecretAccessKey")
        else {
            throw DestinationError.unavailable("\(context): the answer holds no credentials", code: "STSAnswer")
        }
        return Fetched(
            credentials: SigV4Credentials(accessKeyID: Secret(id), secretAccessKey: Secret(secret), sessionToken: credentials.value("SessionToken").map(Secret.init)),
            expiration: credentials.value("Expiration").flatMap(S3Time.parse))
    }

    // MARK: Plumbing

    /// The JSON the container endpoint, instance metadata and `credential_process` answer.
    static func credentials(fromJSON body: Data, context: String) throws -> Fetched {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let id = object["AccessKeyId"] as? String, let secret = object["SecretAccessKey"] as? String
        else {
            throw DestinationError.unavailable("\(context): the answer holds no AccessKeyId and SecretAccessKey", code: "CredentialsAnswer")
        }
        let token = (object["Token"] as? String) ?? (object["SessionToken"] as? String)
        return Fetched(
            credentials: SigV4Credentials(accessKeyID: Secret(id), secretAccessKey: Secret(secret), sessionToken: token.map(Secret.init)),
            expiration: (object["Expiration"] as? String).flatMap(S3Time.parse))
    }

    /// The largest answer read from a credentials source (STS, the container endpoint, instance metadata).
    static let answerLimit = 1 << 20

    /// One request to a credentials source: its body on 2xx (at most ``answerLimit`` bytes); a 3xx is refused,
    /// never followed. Unreachable or 5xx: unavailable; 4xx: blocked (with
    /// STS's error code when `stsErrors`). With `network` (STS), the request goes through a client of its own made
    /// by ``HTTPClientFactory`` (the destination's proxy and CAs); without (the container endpoint, instance
    /// metadata), directly. Either client is the request's own, shut down after it.
    static func request(
        _ method: HTTPMethod, _ url: String, headers: [(String, String)], body: Data? = nil, context: String,
        stsErrors: Bool = false, timeout: TimeAmount = .seconds(30), network: NetworkSettings? = nil
    ) async throws -> Data {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response: HTTPClientResponse
        let data: ByteBuffer
        // A client of its own that never follows a redirect: a 3xx from instance metadata or the container endpoint
        // would otherwise carry the IMDS token (or the container's authorization) to another host and take that
        // host's keys.
        var base = HTTPClient.Configuration(redirectConfiguration: .disallow)
        base.connectionPool.retryConnectionEstablishment = false
        let configuration = if let network, let parsed = URL(string: url) {
            HTTPClientFactory.configuration(base, for: parsed, network: network)
        } else {
            base
        }
        let own = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            response = try await own.execute(request, timeout: timeout)
            data = try await response.body.collect(upTo: answerLimit)
            try? await own.shutdown()
        } catch is NIOTooManyBytesError {
            try? await own.shutdown()
            throw DestinationError.unavailable("\(context): the answer is larger than \(answerLimit >> 20) MiB; refused", code: "CredentialsAnswer")
        } catch {
            try? await own.shutdown()
            let tls = network.flatMap { TLSFailureHint.text(for: error, trust: $0.trust, keys: "ca_file, AWS_CA_BUNDLE or SSL_CERT_FILE") }
            let via = network.flatMap { network in URL(string: url).flatMap { network.proxy.decision(for: $0).proxy } }.map { " (through the proxy \($0))" } ?? ""
            let detail = tls ?? String(describing: error)
            throw DestinationError.unavailable("\(context)\(via): \(Redactor.shared.redact(detail))", code: "CredentialsUnreachable")
        }
        let bytes = Data(data.readableBytesView)
        if (300..<400).contains(Int(response.status.code)) {
            let location = response.headers.first(name: "Location").map { " to \(Redactor.shared.snippet($0, limit: 200))" } ?? ""
            throw DestinationError.blocked("\(context): answered \(response.status.code), a redirect\(location); a credentials source's redirect is never followed",
                                           code: "CredentialsRedirect")
        }
        guard (200..<300).contains(Int(response.status.code)) else {
            var code = "http-\(response.status.code)"
            var message = String(decoding: bytes, as: UTF8.self)
            if stsErrors, let root = S3XMLElement.parse(bytes), let error = root.child("Error") {
                code = error.value("Code") ?? code
                message = error.value("Message") ?? message
            }
            // Redacted before it is cut, so that a secret the answer echoes cannot straddle the cut.
            let text = String(Redactor.shared.redact("\(context): \(response.status.code) \(code): \(message)").prefix(400))
            if response.status.code >= 500 || response.status.code == 429 { throw DestinationError.unavailable(text, code: code) }
            throw DestinationError.blocked(text, code: code)
        }
        return bytes
    }
}
