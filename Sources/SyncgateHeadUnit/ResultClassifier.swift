import SyncgateCore
import SyncgateSDL

/// What a failed RPC's result code means for the delivery layer.
public enum ResultClassifier {
    /// How long to wait before trying again when the head unit holds the app at level NONE.
    public static let levelNoneWait: Duration = .milliseconds(500)

    public static func failureClass(for code: ResultCode, hmiLevel: String) -> FailureClass {
        switch code {
        case .corruptedData, .genericError, .tooManyPendingRequests, .timedOut, .applicationNotRegistered, .retry,
            .inUse, .aborted, .truncatedData:
            return .retryable()
        case .rejected:
            return hmiLevel == "NONE" ? .deferred(after: levelNoneWait) : .retryable()
        case .invalidData, .disallowed, .userDisallowed, .outOfMemory, .unsupportedRequest, .unsupportedResource,
            .charLimitExceeded, .invalidID, .duplicateName, .readOnly, .encryptionNeeded, .unsupportedVersion:
            return .permanent
        default:
            return .permanent
        }
    }

    /// The error for a failed response.
    public static func error(
        _ code: ResultCode, info: String?, function: String, subject: String, hmiLevel: String
    ) -> DestinationError {
        var message = "\(function) \(subject): head unit answered \(code.rawValue)"
        if let info, !info.isEmpty { message += " (\(info))" }
        switch code {
        case .rejected where hmiLevel == "NONE":
            message += "; the app is at HMI level NONE: waiting for the head unit to raise it"
        case .outOfMemory:
            message += "; the head unit has no space left for this app"
        case .corruptedData:
            message += "; the data was damaged in transit (CRC mismatch)"
        default: break
        }
        return DestinationError(failureClass(for: code, hmiLevel: hmiLevel), code: code.rawValue, message)
    }
}
