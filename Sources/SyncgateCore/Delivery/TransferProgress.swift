/// What a multi-file transfer's progress callback receives after each change.
public struct TransferProgress: Sendable {
    /// The file this update is about.
    public var file: FileKey
    /// Fraction of all bytes of the transfer done, 0...1.
    public var fractionCompleted: Double
    public var bytesDone: Int64
    public var bytesTotal: Int64
    /// Bytes of this file delivered in its current attempt, and its size.
    public var fileBytesDone: Int64
    public var fileBytesTotal: Int64
    /// The file's final error, when this update reports its failure.
    public var error: DeliveryFailure?
    /// Cancels the rest of the transfer.
    public var cancellation: CancellationHandle

    public func cancelRest() { cancellation.cancel() }
}
