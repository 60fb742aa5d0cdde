import SyncgateCore
import SyncgateHeadUnit
import SyncgateSDL
import Testing

/// Every result code a head unit may answer, and what the delivery layer is told: its class and whether it is
/// about the one file or the head unit as a whole (the table of docs/headunit.md).
@Suite("head-unit result codes: class and scope")
struct ResultClassifierTests {
    static let fileRetryable = Classification(.retryable(), scope: .file)
    static let filePermanent = Classification(.permanent, scope: .file)

    @Test("PutFile, DeleteFile, ListFiles at level FULL")
    func fileOperations() {
        let expected: [(ResultCode, Classification)] = [
            (.corruptedData, Self.fileRetryable), (.genericError, Self.fileRetryable), (.timedOut, Self.fileRetryable),
            (.applicationNotRegistered, Self.fileRetryable), (.rejected, Self.fileRetryable), (.aborted, Self.fileRetryable),
            (.invalidData, Self.filePermanent), (.charLimitExceeded, Self.filePermanent), (.duplicateName, Self.filePermanent),
            (.unsupportedResource, Self.filePermanent), (.readOnly, Self.filePermanent),
            (ResultCode("SOMETHING_NEW"), Self.filePermanent),
            // The head unit is full: about every file, and it passes when space is freed.
            (.outOfMemory, Classification(.retryable(), scope: .destination)),
            // The head unit asks for fewer requests: throttling, no retry spent.
            (.tooManyPendingRequests, Classification(.deferred(after: ResultClassifier.throttleWait), scope: .destination)),
            // The head unit will not take files from this app at all.
            (.disallowed, Classification(.permanent, scope: .destination)),
            (.userDisallowed, Classification(.permanent, scope: .destination)),
            (.unsupportedRequest, Classification(.permanent, scope: .destination)),
            (.encryptionNeeded, Classification(.permanent, scope: .destination)),
        ]
        for (code, classification) in expected {
            #expect(ResultClassifier.classification(for: code, hmiLevel: "FULL") == classification, "\(code)")
            let error = ResultClassifier.error(code, info: "why", function: "PutFile", subject: "\"a.png\"", hmiLevel: "FULL")
            #expect(error.classification == classification, "\(code)")
            #expect(error.code == code.rawValue && error.message.contains("(why)"), "\(error)")
        }
    }

    @Test("at level NONE, REJECTED and DISALLOWED wait for a higher level: deferred, the file's")
    func levelNone() {
        for code in [ResultCode.rejected, .disallowed, .userDisallowed] {
            let classification = ResultClassifier.classification(for: code, hmiLevel: "NONE")
            #expect(classification == Classification(.deferred(after: ResultClassifier.levelNoneWait), scope: .file), "\(code)")
            let error = ResultClassifier.error(code, info: nil, function: "PutFile", subject: "\"a\"", hmiLevel: "NONE")
            #expect(error.message.contains("HMI level NONE"), "\(error)")
        }
        #expect(ResultClassifier.classification(for: .corruptedData, hmiLevel: "NONE") == Self.fileRetryable)
    }

    @Test("RegisterAppInterface refused: blocked when it refuses the app, unavailable otherwise")
    func registration() {
        let blocked: [ResultCode] = [
            .disallowed, .userDisallowed, .invalidData, .duplicateName, .unsupportedVersion, .encryptionNeeded,
        ]
        let unavailable: [ResultCode] = [
            .tooManyApplications, .applicationRegisteredAlready, .outOfMemory, .tooManyPendingRequests, .genericError,
            .rejected, ResultCode("SOMETHING_NEW"),
        ]
        for code in blocked {
            let error = ResultClassifier.registrationError(code, info: nil, app: "Build Tracker")
            #expect(error.classification == Classification(.permanent, scope: .destination), "\(code)")
            #expect(error.message.contains("blocked") && error.message.contains("Build Tracker"), "\(error)")
        }
        for code in unavailable {
            let error = ResultClassifier.registrationError(code, info: nil, app: "Build Tracker")
            #expect(error.classification == Classification(.retryable(), scope: .destination), "\(code)")
        }
    }
}
