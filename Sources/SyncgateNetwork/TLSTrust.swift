import NIOSSL

/// The certificate authorities a destination's TLS connections trust (docs/network.md). A bundle replaces the
/// system's roots, as the aws CLI's `ca_bundle` / `AWS_CA_BUNDLE` and OpenSSL's `SSL_CERT_FILE` do: to trust a
/// company CA besides the public ones, give a file holding both.
///
/// Precedence: the destination's `ca_file`, then `AWS_CA_BUNDLE` (S3 and its STS requests only), then
/// `SSL_CERT_FILE`, then the system's store. An empty variable is unset.
public enum TLSTrust: Sendable, Hashable, CustomStringConvertible {
    case system
    /// `origin`: `ca_file`, `AWS_CA_BUNDLE` or `SSL_CERT_FILE`.
    case bundle(CABundle, origin: String)

    /// Reads the bundle that applies. `caFile` is the `ca_file` key's path, already resolved against the config's
    /// folder; `awsCABundle` says whether `AWS_CA_BUNDLE` counts (an AWS destination).
    public static func resolve(caFile: String?, environment: [String: String], awsCABundle: Bool) throws(NetworkSettingsError) -> TLSTrust {
        var candidates: [(origin: String, path: String)] = []
        if let caFile { candidates.append(("ca_file", caFile)) }
        if awsCABundle, let path = environment["AWS_CA_BUNDLE"], !path.isEmpty { candidates.append(("AWS_CA_BUNDLE", path)) }
        if let path = environment["SSL_CERT_FILE"], !path.isEmpty { candidates.append(("SSL_CERT_FILE", path)) }
        guard let chosen = candidates.first else { return .system }
        do {
            return .bundle(try CABundle.load(chosen.path), origin: chosen.origin)
        } catch {
            let note = chosen.origin == "ca_file" ? "" : " (\(chosen.origin) names it; set ca_file on the destination to use another)"
            throw NetworkSettingsError(key: "ca_file", error.description + note)
        }
    }

    /// `the system's CA store`, or `the CA bundle /path (ca_file)`.
    public var description: String {
        switch self {
        case .system: "the system's CA store"
        case .bundle(let bundle, let origin): "the CA bundle \(bundle.path) (\(origin))"
        }
    }

    /// NIOSSL's trust roots for it (nil: the default, the system's).
    var trustRoots: NIOSSLTrustRoots? {
        switch self {
        case .system: nil
        case .bundle(let bundle, _): .certificates(bundle.certificates)
        }
    }

    var fingerprintText: String {
        switch self {
        case .system: ""
        case .bundle(let bundle, let origin): "ca=\(origin)\u{0}\(bundle.path)\u{0}\(bundle.sha256)"
        }
    }
}
