/// An RPC response's `resultCode` (rpc_spec `Result`). Open-ended: a head unit may answer a code this
/// build does not list.
public struct ResultCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ raw: String) { self.rawValue = raw }

    public static let success = ResultCode("SUCCESS")
    public static let unsupportedRequest = ResultCode("UNSUPPORTED_REQUEST")
    public static let unsupportedResource = ResultCode("UNSUPPORTED_RESOURCE")
    public static let disallowed = ResultCode("DISALLOWED")
    public static let rejected = ResultCode("REJECTED")
    public static let aborted = ResultCode("ABORTED")
    public static let ignored = ResultCode("IGNORED")
    public static let retry = ResultCode("RETRY")
    public static let inUse = ResultCode("IN_USE")
    public static let vehicleDataNotAvailable = ResultCode("VEHICLE_DATA_NOT_AVAILABLE")
    public static let timedOut = ResultCode("TIMED_OUT")
    public static let invalidData = ResultCode("INVALID_DATA")
    public static let charLimitExceeded = ResultCode("CHAR_LIMIT_EXCEEDED")
    public static let invalidID = ResultCode("INVALID_ID")
    public static let duplicateName = ResultCode("DUPLICATE_NAME")
    public static let applicationNotRegistered = ResultCode("APPLICATION_NOT_REGISTERED")
    public static let wrongLanguage = ResultCode("WRONG_LANGUAGE")
    public static let outOfMemory = ResultCode("OUT_OF_MEMORY")
    public static let tooManyPendingRequests = ResultCode("TOO_MANY_PENDING_REQUESTS")
    public static let tooManyApplications = ResultCode("TOO_MANY_APPLICATIONS")
    public static let applicationRegisteredAlready = ResultCode("APPLICATION_REGISTERED_ALREADY")
    public static let warnings = ResultCode("WARNINGS")
    public static let genericError = ResultCode("GENERIC_ERROR")
    public static let userDisallowed = ResultCode("USER_DISALLOWED")
    public static let truncatedData = ResultCode("TRUNCATED_DATA")
    public static let unsupportedVersion = ResultCode("UNSUPPORTED_VERSION")
    public static let corruptedData = ResultCode("CORRUPTED_DATA")
    public static let fileNotFound = ResultCode("FILE_NOT_FOUND")
    public static let dataNotAvailable = ResultCode("DATA_NOT_AVAILABLE")
    public static let readOnly = ResultCode("READ_ONLY")
    public static let encryptionNeeded = ResultCode("ENCRYPTION_NEEDED")

    /// Codes that count as success (`success: true`).
    public var isSuccess: Bool { self == .success || self == .warnings }

    public var description: String { rawValue }
}
