import SyncgateCore
import SyncgateLocal
import SyncgateSheets

/// Every destination type this build knows: one registration line per plugin.
enum BuiltinPlugins {
    static let all: [PluginRegistration] = [
        LocalDestination.registration,
        SheetsDestination.registration,
    ]

    static let registry = PluginRegistry(all)
}
