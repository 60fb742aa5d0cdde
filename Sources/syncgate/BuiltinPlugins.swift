import SyncgateCore
import SyncgateHeadUnit
import SyncgateLocal

/// Every destination type this build knows: one registration line per plugin.
enum BuiltinPlugins {
    static let all: [PluginRegistration] = [
        LocalDestination.registration,
        HeadUnitDestination.registration,
    ]

    static let registry = PluginRegistry(all)
}
