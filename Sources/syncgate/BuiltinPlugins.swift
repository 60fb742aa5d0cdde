import SyncgateCore
import SyncgateLocal

/// Every destination type this build knows: one registration line per plugin.
enum BuiltinPlugins {
    static let all: [PluginRegistration] = [
        LocalDestination.registration,
    ]

    static let registry = PluginRegistry(all)
}
