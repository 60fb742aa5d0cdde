/// Why a ``SourceWatcher`` could not start (the message says what to do about it).
public struct WatchError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}
