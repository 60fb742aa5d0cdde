import Foundation
import SyncgateCore

/// The answer to DeleteObjects: the keys that could not be deleted, each with its own S3 error (in quiet mode
/// only failures are listed; every other key was deleted or was not there).
struct S3DeleteResult {
    var failures: [String: DestinationError]

    /// Parses `<DeleteResult><Error><Key/><Code/><Message/></Error>...</DeleteResult>`; nil for any other body.
    init?(_ body: Data, display: (String) -> String) {
        guard let root = S3XMLElement.parse(body), root.name == "DeleteResult" else { return nil }
        failures = [:]
        for error in root.all("Error") {
            guard let key = error.value("Key") else { continue }
            let code = error.value("Code")
            let status = code.map { S3ErrorResponse.retryableCodes.contains($0) } == true ? 503 : 400
            failures[key] = S3ErrorResponse(status: status, code: code, message: error.value("Message"))
                .destinationError("DeleteObjects \(display(key))")
        }
    }
}
