import SyncgateCore
import SyncgateExec
import SyncgateHeadUnit
import SyncgateLocal
import SyncgateS3
import SyncgateSheets

/// Every destination type this build knows: one registration line per plugin. A `type` none of them names is
/// the external plugin program `syncgate-destination-TYPE` (docs/plugins.md).
enum BuiltinPlugins {
    static let all: [PluginRegistration] = [
        LocalDestination.registration,
        S3Destination.registration,
        HeadUnitDestination.registration,
        SheetsDestination.registration,
        ExecDestination.registration,
    ]

    static let registry = PluginRegistry(all) { type in
        ExecDestination.registration(forType: type, known: all.map(\.type).sorted())
    }
}
