import SyncgateJSON
import SyncgateSDL

/// A decoded RPC response: result code, info and parameters.
struct SDLResponse: Sendable {
    var code: ResultCode
    var info: String?
    var parameters: [String: JSONValue]
    var message: RPCMessage

    init(_ message: RPCMessage) throws {
        self.message = message
        parameters = try message.parameters()
        code = ResultCode(parameters["resultCode"]?.string ?? (parameters["success"]?.bool == true ? "SUCCESS" : "GENERIC_ERROR"))
        info = parameters["info"]?.string
    }

    var spaceAvailable: Int64? { parameters["spaceAvailable"]?.int64 }

    /// Whether the head unit did what was asked: `success: true`, or a result code that means success. Core answers
    /// a registration in another language WRONG_LANGUAGE with `success: true`: the app is registered.
    var isSuccess: Bool { code.isSuccess || parameters["success"]?.bool == true }
}
