import AsyncHTTPClient
import Foundation
import NIOSSL

/// Builds the `HTTPClient.Configuration` of an HTTP destination's client from the plugin's own settings (timeouts,
/// pool, redirects) and its ``NetworkSettings``: the proxy chosen for the endpoint (decided once, here, for the
/// client's whole life) and the trust roots of its TLS connections. S3, its STS requests and Sheets make their
/// clients here.
///
/// The credential endpoints of a machine (EC2 instance metadata, the container credentials endpoint) are
/// link-local or loopback addresses: their requests never go through here, so never through a proxy.
public enum HTTPClientFactory {
    /// `base` with the proxy `network` chooses for `scheme://host:port` and its CA trust.
    public static func configuration(
        _ base: HTTPClient.Configuration, scheme: String, host: String, port: Int?, network: NetworkSettings
    ) -> HTTPClient.Configuration {
        var configuration = base
        configuration.proxy = network.proxy.decision(scheme: scheme, host: host, port: port).proxy?.clientProxy
        if let roots = network.trust.trustRoots {
            var tls = configuration.tlsConfiguration ?? TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = roots
            configuration.tlsConfiguration = tls
        }
        return configuration
    }

    /// ``configuration(_:scheme:host:port:network:)`` for a URL's scheme, host and port.
    public static func configuration(_ base: HTTPClient.Configuration, for url: URL, network: NetworkSettings) -> HTTPClient.Configuration {
        configuration(base, scheme: url.scheme ?? "https", host: url.host ?? "", port: url.port, network: network)
    }
}
