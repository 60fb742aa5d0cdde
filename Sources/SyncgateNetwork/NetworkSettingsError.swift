/// A network setting that cannot be used: a malformed proxy URL, a CA bundle that is missing or holds no
/// certificate. `key` is the destination key the mistake belongs to (`proxy` or `ca_file`, also when the value came
/// from an environment variable: setting that key overrides it), so that the plugin reports it as a located config
/// error. The message names the file or variable, never a password.
public struct NetworkSettingsError: Error, Sendable, CustomStringConvertible {
    public var key: String
    public var message: String

    public init(key: String, _ message: String) {
        self.key = key
        self.message = message
    }

    public var description: String { message }
}
