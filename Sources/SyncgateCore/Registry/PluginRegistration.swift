/// How a destination plugin makes itself known: its `type` name in `plugins.yaml`, a one-line summary, and a
/// decoder of its own keys (through ``DestinationSetup/decode(_:)``) that checks them and returns how to build
/// the destination. The config is decoded and checked when it is loaded; the plugin itself is built only when a
/// command uses it (a sync, `ls`, `rm`), so `validate`, `status` and `forget` build none. Neither step may do network
/// I/O: connect lazily.
public struct PluginRegistration: Sendable {
    public var type: String
    public var summary: String
    /// Decodes and checks the plugin's keys; returns what builds the destination.
    public var decode: @Sendable (DestinationSetup) throws -> @Sendable () -> any Destination
    /// Whether the destination can delete what it holds (`delete_remote: true` is refused where it cannot).
    public var deletes = true

    public init(type: String, summary: String, decode: @escaping @Sendable (DestinationSetup) throws -> @Sendable () -> any Destination) {
        self.type = type
        self.summary = summary
        self.decode = decode
    }

    /// A plugin whose factory decodes and builds at once (the destination is then built when the config is loaded).
    public init(type: String, summary: String, make: @escaping @Sendable (DestinationSetup) throws -> any Destination) {
        self.init(type: type, summary: summary) { setup in
            let destination = try make(setup)
            return { destination }
        }
    }
}
