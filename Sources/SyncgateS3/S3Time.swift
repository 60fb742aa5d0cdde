import Foundation

/// The timestamps AWS answers (`2026-11-24T09:12:03Z`, `2026-11-24T09:12:03.000Z`): ListMultipartUploads'
/// `Initiated`, the `Expiration` of STS, container and instance-metadata credentials.
enum S3Time {
    static func parse(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}
