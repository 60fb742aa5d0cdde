/// Why a plugin's session ended before a request was answered: the message names the plugin.
struct PluginGone: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
