import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport

/// A destination that flattens folders into file names ("a/b.txt" is stored as "a_b.txt"), as a head unit does:
/// two paths can end up under one name, so the engine must look for clashes before sending.
struct FlatNamesDestination: Destination {
    func remoteName(forRelativePath path: String) throws -> String { path.replacingOccurrences(of: "/", with: "_") }
    func upload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt {
        Receipt(remoteName: item.remoteName)
    }
    func delete(remoteName: String) async throws {}
    func list() async throws -> RemoteListing { RemoteListing(entries: []) }
}

extension FlatNamesDestination {
    /// An engine sending `outbox/` (in `dir`) to a flattening destination `flat` and a local folder `copy`.
    static func engineWithCopy(in dir: TemporaryDirectory) throws -> SyncEngine {
        let registry = PluginRegistry([PluginRegistration(type: "flat", summary: "test") { _ in FlatNamesDestination() }, LocalDestination.registration])
        let config = try GatewayConfig.parse(text: """
            version: 1
            state: state/ledger.sqlite
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: flat, type: flat}, {name: copy, type: local, path: copy, fsync: false}]
            routes: [{match: ["**/*"], to: [flat, copy]}]
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: registry)
        return SyncEngine(config: config, ledger: try Ledger(path: config.statePath))
    }
}
