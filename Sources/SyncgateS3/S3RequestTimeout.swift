import SyncgateCore

/// A request that did not end within its time limit (``S3Settings/requestTimeout``).
struct S3RequestTimeout: Error, Sendable, CustomStringConvertible {
    var limit: Duration
    var description: String { "no answer within \(limit.syncgateText)" }
}
