/// How a destination plugin makes itself known: its `type` name in `plugins.yaml`, a one-line summary, and a
/// factory that decodes the plugin's own keys (through ``DestinationSetup/decode(_:)``) and builds the
/// destination. The factory must not do network I/O: `syncgate validate` calls it too. Connect lazily.
public struct PluginRegistration: Sendable {
    public var type: String
    public var summary: String
    public var make: @Sendable (DestinationSetup) throws -> any Destination

    public init(type: String, summary: String, make: @escaping @Sendable (DestinationSetup) throws -> any Destination) {
        self.type = type
        self.summary = summary
        self.make = make
    }
}
