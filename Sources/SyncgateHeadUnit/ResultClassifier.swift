import SyncgateCore
import SyncgateSDL

/// What a failed RPC's result code means for the delivery layer: its class, and whether it is about the one file
/// or about the head unit as a whole (see docs/headunit.md, "Errors and what happens next").
public enum ResultClassifier {
    /// How long to wait before trying again when the head unit holds the app at level NONE.
    public static let levelNoneWait: Duration = .milliseconds(500)
    /// How long the destination's uploads pause after TOO_MANY_PENDING_REQUESTS.
    public static let throttleWait: Duration = .seconds(1)

    /// Codes that refuse the app itself: trying again cannot help until its settings (the app's name or id, the
    /// head unit's policy for it, or syncgate) change.
    static let refusingTheApp: Set<ResultCode> = [
        .disallowed, .userDisallowed, .unsupportedRequest, .encryptionNeeded,
    ]

    /// The classification of a failed PutFile, DeleteFile or ListFiles.
    public static func classification(for code: ResultCode, hmiLevel: String) -> Classification {
        switch code {
        case .corruptedData, .genericError, .timedOut, .applicationNotRegistered, .retry, .inUse, .aborted,
            .truncatedData, .ignored, .dataNotAvailable:
            return Classification(.retryable())
        case .rejected, .disallowed, .userDisallowed:
            // At level NONE Core refuses (REJECTED) more than a few files, and a policy may allow files only at
            // higher levels (DISALLOWED): wait for the level to rise. At other levels REJECTED is passing trouble;
            // DISALLOWED means the policy refuses the app files at all.
            if hmiLevel == "NONE" { return Classification(.deferred(after: levelNoneWait)) }
            return code == .rejected ? Classification(.retryable()) : Classification(.permanent, scope: .destination)
        case .tooManyPendingRequests:
            return Classification(.deferred(after: throttleWait), scope: .destination)
        case .outOfMemory:
            return Classification(.retryable(), scope: .destination)
        case _ where refusingTheApp.contains(code):
            return Classification(.permanent, scope: .destination)
        default:
            // INVALID_DATA, CHAR_LIMIT_EXCEEDED, INVALID_ID, DUPLICATE_NAME, READ_ONLY, UNSUPPORTED_RESOURCE,
            // FILE_NOT_FOUND and codes this build does not know: this file will be refused again.
            return Classification(.permanent)
        }
    }

    /// The class alone (see ``classification(for:hmiLevel:)``).
    public static func failureClass(for code: ResultCode, hmiLevel: String) -> FailureClass {
        classification(for: code, hmiLevel: hmiLevel).failureClass
    }

    /// The error for a failed PutFile, DeleteFile or ListFiles.
    public static func error(
        _ code: ResultCode, info: String?, function: String, subject: String, hmiLevel: String
    ) -> DestinationError {
        var message = "\(function) \(subject): head unit answered \(code.rawValue)"
        if let info, !info.isEmpty { message += " (\(info))" }
        let classification = classification(for: code, hmiLevel: hmiLevel)
        switch code {
        case .rejected where hmiLevel == "NONE", .disallowed where hmiLevel == "NONE", .userDisallowed where hmiLevel == "NONE":
            message += "; the app is at HMI level NONE: waiting for the head unit to raise it"
        case .outOfMemory:
            message += "; the head unit has no space left for this app: its files wait until space is freed"
        case .corruptedData:
            message += "; the data was damaged in transit (CRC mismatch)"
        case .tooManyPendingRequests:
            message += "; the head unit asks for fewer requests at once"
        case _ where classification.scope == .destination && classification.failureClass == .permanent:
            message += "; the head unit refuses this app files: blocked until its settings change or `syncgate retry`"
        default: break
        }
        return DestinationError(classification, code: code.rawValue, message)
    }

    /// Codes of a refused RegisterAppInterface that refuse the app itself (blocked): its policy (DISALLOWED,
    /// USER_DISALLOWED), its registration as configured (INVALID_DATA: the name or id; DUPLICATE_NAME: another app
    /// registered under its name; CHAR_LIMIT_EXCEEDED), or what this gateway speaks (UNSUPPORTED_VERSION,
    /// UNSUPPORTED_REQUEST, ENCRYPTION_NEEDED). Every other refusal (TOO_MANY_APPLICATIONS,
    /// APPLICATION_REGISTERED_ALREADY, OUT_OF_MEMORY, TOO_MANY_PENDING_REQUESTS, GENERIC_ERROR, REJECTED, codes this
    /// build does not know) makes the head unit unavailable for now.
    static let registrationBlockers: Set<ResultCode> = [
        .disallowed, .userDisallowed, .invalidData, .duplicateName, .charLimitExceeded, .unsupportedVersion,
        .unsupportedRequest, .encryptionNeeded,
    ]

    /// The error for a refused RegisterAppInterface: always about the destination (no file can go without a
    /// registration), blocked or unavailable.
    public static func registrationError(_ code: ResultCode, info: String?, app: String) -> DestinationError {
        var message = "RegisterAppInterface \"\(app)\": head unit answered \(code.rawValue)"
        if let info, !info.isEmpty { message += " (\(info))" }
        if registrationBlockers.contains(code) {
            return .blocked(
                message + "; the head unit refuses this app: blocked until the destination's settings change or `syncgate retry`",
                code: code.rawValue)
        }
        return .unavailable(message + "; the head unit cannot take the app now", code: code.rawValue)
    }
}
