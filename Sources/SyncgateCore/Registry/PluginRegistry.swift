/// The destination types the gateway knows, by `type` name. The CLI builds it from one registration line per
/// plugin; the core knows nothing of any particular plugin.
public struct PluginRegistry: Sendable {
    private var registrations: [String: PluginRegistration] = [:]
    private var fallback: (@Sendable (String) -> PluginRegistration?)?

    /// `fallback` is asked for a type no registration names (the CLI's: a plugin program found by that name).
    public init(_ registrations: [PluginRegistration], fallback: (@Sendable (String) -> PluginRegistration?)? = nil) {
        for registration in registrations { self.registrations[registration.type] = registration }
        self.fallback = fallback
    }

    public func registration(for type: String) -> PluginRegistration? { registrations[type] ?? fallback?(type) }

    /// All registered type names, sorted.
    public var types: [String] { registrations.keys.sorted() }

}
