import SyncgateCore
import SyncgateHeadUnit
import SyncgateLocal
import SyncgateS3
import SyncgateSheets

/// Every destination type this build knows: one registration line per plugin.
enum BuiltinPlugins {
    static let all: [PluginRegistration] = [
        LocalDestination.registration,
        S3Destination.registration,
        HeadUnitDestination.registration,
        SheetsDestination.registration,
    ]

    static let registry = PluginRegistry(all)
}
