import Crypto
import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

@testable import SyncgateSheets

/// Builds sheets destinations from YAML (through the core's config loader, as `syncgate` does) and upload items.
enum SheetsFixtures {
    static let registry = PluginRegistry([SheetsDestination.registration])

    /// A whole config around one destination whose plugin keys are `keys` (YAML lines, indented by 4).
    static func config(_ keys: String, name: String = "sheet", base: URL) -> String {
        """
        version: 1
        state: state.sqlite
        sources:
          - name: inbox
            path: inbox
        destinations:
          - name: \(name)
            type: sheets
        \(keys.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n"))
        routes:
          - match: ["**/*"]
            to: [\(name)]
        """
    }

    /// A destination of `keys`, loaded with `environment` as syncgate's (none by default: a destination without
    /// `credentials_file` then ends its credential chain at the metadata server; pass `NO_GCE_CHECK` or
    /// `GCE_METADATA_HOST` to keep it off the network).
    static func destination(_ keys: String, base: URL, environment: [String: String] = [:], checkingFiles: Bool = false) throws -> SheetsDestination {
        let gateway = try GatewayConfig.parse(
            text: config(keys, base: base), file: "plugins.yaml", baseDirectory: base, registry: registry, environment: environment,
            checkingFiles: checkingFiles)
        return try #require(gateway.destinations.first?.destination as? SheetsDestination)
    }

    /// The config as `syncgate validate` loads it (its destinations' details, their errors).
    static func validated(_ keys: String, base: URL, environment: [String: String]) throws -> DestinationConfig {
        let gateway = try GatewayConfig.parse(
            text: config(keys, base: base), file: "plugins.yaml", baseDirectory: base, registry: registry, environment: environment,
            checkingFiles: true)
        return try #require(gateway.destinations.first)
    }

    /// The usual Sheets API destination against `server`.
    static func apiDestination(_ server: SheetsTestServer, extra: String = "", base: URL) throws -> SheetsDestination {
        try destination(
            """
            spreadsheet_id: test-spreadsheet
            credentials_file: \(server.keyFile.path)
            api_base: \(server.baseURL)
            \(extra)
            """, base: base)
    }

    static func sha256(of url: URL) throws -> String {
        let data = try Data(contentsOf: url)
        return SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    static func item(_ dir: TemporaryDirectory, _ relative: String) throws -> UploadItem {
        let url = dir.file(relative)
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        return UploadItem(
            source: "inbox", relativePath: relative, absolutePath: url.path, remoteName: relative,
            size: (attributes[.size] as? NSNumber)?.int64Value ?? 0,
            modificationTime: attributes[.modificationDate] as? Date ?? Date(), sha256: try sha256(of: url), isArtwork: false)
    }

    /// Runs an upload and returns the thrown DestinationError (fails the test when it succeeds).
    static func uploadError(_ destination: SheetsDestination, _ item: UploadItem) async -> DestinationError? {
        do {
            _ = try await destination.upload(item) { _ in }
            Issue.record("upload of \(item.relativePath) succeeded; an error was expected")
            return nil
        } catch let error as DestinationError {
            return error
        } catch {
            Issue.record("unexpected error type: \(error)")
            return nil
        }
    }
}
