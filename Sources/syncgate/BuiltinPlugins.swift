import SyncgateCore
import SyncgateLocal
import SyncgateS3

/// Every destination type this build knows: one registration line per plugin.
enum BuiltinPlugins {
    static let all: [PluginRegistration] = [
        LocalDestination.registration,
        S3Destination.registration,
    ]

    static let registry = PluginRegistry(all)
}
