/// A capability a delivery key needs of a plugin, and the located config error when it is missing.
public struct PluginRequirement: Sendable {
    /// As `hello` spells it (`paces`).
    public var capability: String
    /// The delivery key that needs it (`bandwidth`), and what is said about it.
    public var key: String
    public var message: String
    /// `file:line:column: destinations[0].bandwidth: message`.
    public var located: String

    public init(capability: String, key: String, message: String, located: String) {
        self.capability = capability
        self.key = key
        self.message = message
        self.located = located
    }
}
