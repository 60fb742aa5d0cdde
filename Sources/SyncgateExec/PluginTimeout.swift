/// A request the plugin did not answer within its deadline (it was cancelled).
struct PluginTimeout: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
