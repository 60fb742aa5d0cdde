/// The destination types the gateway knows, by `type` name. The CLI builds it from one registration line per
/// plugin; the core knows nothing of any particular plugin.
public struct PluginRegistry: Sendable {
    private var registrations: [String: PluginRegistration] = [:]

    public init(_ registrations: [PluginRegistration]) {
        for registration in registrations { self.registrations[registration.type] = registration }
    }

    public func registration(for type: String) -> PluginRegistration? { registrations[type] }

    /// All type names, sorted.
    public var types: [String] { registrations.keys.sorted() }

}
