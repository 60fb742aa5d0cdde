import Crypto
import Foundation

/// A destination's resolved network settings: its proxies (``ProxySettings``) and the CAs it trusts
/// (``TLSTrust``). Made once, when the config is loaded; ``HTTPClientFactory`` turns them into a client
/// configuration for each endpoint.
public struct NetworkSettings: Sendable, Hashable {
    public var proxy: ProxySettings
    public var trust: TLSTrust

    public init(proxy: ProxySettings, trust: TLSTrust) {
        self.proxy = proxy
        self.trust = trust
    }

    /// No proxy, the system's CAs: what a destination built without a config uses.
    public static let direct = NetworkSettings(proxy: .none, trust: .system)

    /// The settings of a destination from its keys and the environment. `caFile` is `config.caFile` resolved
    /// against the config file's folder; `awsCABundle`: whether `AWS_CA_BUNDLE` counts (S3). Throws a
    /// ``NetworkSettingsError`` naming the key (`proxy`, `ca_file`) a malformed variable or unreadable bundle
    /// belongs to.
    public static func resolve(
        _ config: NetworkConfig, caFile: String?, environment: [String: String], awsCABundle: Bool
    ) throws(NetworkSettingsError) -> NetworkSettings {
        let proxy = try ProxySettings(override: config.proxy, environment: environment)
        let trust = try TLSTrust.resolve(caFile: caFile, environment: environment, awsCABundle: awsCABundle)
        return NetworkSettings(proxy: proxy, trust: trust)
    }

    /// A hex SHA-256 of everything here that is not in the config's text: the proxies from the environment (with
    /// their passwords), `NO_PROXY`, and which CA bundle with which content. Empty when there is nothing (no proxy,
    /// the system's CAs), so that a destination without network settings keeps the fingerprint it had before.
    public var fingerprint: String {
        let text = [proxy.fingerprintText, trust.fingerprintText].filter { !$0.isEmpty }.joined(separator: "\u{2}")
        guard !text.isEmpty else { return "" }
        return SHA256.hash(data: Array(("network-v1\u{0}" + text).utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// Whether anything is set: a proxy (by the key or the environment, whether or not it applies to a host) or a CA
    /// bundle. `validate` describes the route only then.
    public var isSet: Bool {
        proxy.override != nil || proxy.https != nil || proxy.http != nil || trust != .system
    }

    /// How requests to `url` travel, for logs and `validate`: `through the proxy http://proxy:3128 (HTTPS_PROXY),
    /// trusting the CA bundle /etc/company.pem (ca_file)`. Never a password.
    public func describe(_ url: URL) -> String {
        let route = proxy.decision(for: url).description
        guard url.scheme?.lowercased() == "https" else { return route }
        return "\(route), trusting \(trust)"
    }
}
