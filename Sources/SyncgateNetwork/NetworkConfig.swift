import Foundation
import SyncgateCore

/// The network keys every HTTP destination has, read from the destination's own mapping beside its other keys:
///
/// | key | value |
/// |---|---|
/// | `proxy` | `http://[user:password@]host:port`, or `none`; overrides `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` |
/// | `ca_file` | a PEM file of the CAs to trust instead of the system's (relative to the config file) |
///
/// The proxy URL is checked here (located at its line); the CA file is read when the plugin resolves the settings
/// (``NetworkSettings/resolve(_:caFile:environment:awsCABundle:)``), with its path resolved against the config's
/// folder.
public struct NetworkConfig: Decodable, Sendable {
    public var proxy: ProxySettings.Override?
    /// As written (relative paths are the plugin's to resolve).
    public var caFile: String?

    enum CodingKeys: String, CodingKey {
        case proxy
        case caFile = "ca_file"
    }

    public init(proxy: ProxySettings.Override? = nil, caFile: String? = nil) {
        self.proxy = proxy
        self.caFile = caFile
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let text = try c.decodeIfPresent(String.self, forKey: .proxy) {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            if trimmed.lowercased() == "none" {
                proxy = .direct
            } else if trimmed.isEmpty {
                throw ConfigValueError("must be a proxy URL (http://[user:password@]host:port) or none", key: CodingKeys.proxy)
            } else {
                do {
                    proxy = .server(try HTTPProxy(parsing: trimmed))
                } catch {
                    throw ConfigValueError(error.description, key: CodingKeys.proxy)
                }
            }
        }
        caFile = try c.decodeIfPresent(String.self, forKey: .caFile)
        if let caFile, caFile.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ConfigValueError("must be the path of a PEM file of CA certificates", key: CodingKeys.caFile)
        }
    }
}
