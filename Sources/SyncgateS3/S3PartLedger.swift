import Foundation

/// The parts of one multipart upload acknowledged so far (part number -> ETag), written by concurrent part tasks.
final class S3PartLedger: @unchecked Sendable {
    private let lock = NSLock()
    private var etags: [Int: String]

    init(_ etags: [Int: String]) { self.etags = etags }

    func record(_ number: Int, _ etag: String) {
        lock.withLock { etags[number] = etag }
    }

    var snapshot: [Int: String] { lock.withLock { etags } }
}
