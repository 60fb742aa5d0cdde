import Synchronization

/// The parts of one multipart upload acknowledged so far (part number -> ETag), written by concurrent part tasks.
/// `onChange` sees each new state in order (it runs under the lock, so a slower write of an older state cannot
/// land after a newer one): the ledger's record of the upload.
final class S3PartLedger: Sendable {
    private let etags: Mutex<[Int: String]>
    private let onChange: @Sendable ([Int: String]) -> Void

    init(_ etags: [Int: String], onChange: @escaping @Sendable ([Int: String]) -> Void = { _ in }) {
        self.etags = Mutex(etags)
        self.onChange = onChange
    }

    func record(_ number: Int, _ etag: String) {
        etags.withLock { etags in
            etags[number] = etag
            onChange(etags)
        }
    }

    var snapshot: [Int: String] { etags.withLock { $0 } }
}
