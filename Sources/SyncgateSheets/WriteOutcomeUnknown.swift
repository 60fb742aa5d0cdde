import SyncgateCore

/// Thrown by a write (an append, an Apps Script post) that may have been applied although it failed: the request
/// went out and the answer was lost, late, a 5xx, or a success the client could not read. The destination then
/// re-reads the key column before the rows are sent again; ``error`` is what it reports.
struct WriteOutcomeUnknown: Error, Sendable, CustomStringConvertible {
    var error: DestinationError
    var description: String { error.description }
}
