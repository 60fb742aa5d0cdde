/// RPC function ids (rpc_spec MOBILE_API.xml, `FunctionID`).
public enum FunctionID {
    public static let registerAppInterface: UInt32 = 1
    public static let unregisterAppInterface: UInt32 = 2
    public static let putFile: UInt32 = 32
    public static let deleteFile: UInt32 = 33
    public static let listFiles: UInt32 = 34
    public static let setAppIcon: UInt32 = 35
    public static let onHMIStatus: UInt32 = 0x8000
    public static let onAppInterfaceUnregistered: UInt32 = 0x8001
    public static let onPermissionsChange: UInt32 = 0x8008
    public static let onSystemRequest: UInt32 = 0x800D
    public static let onDriverDistraction: UInt32 = 0x8007

    public static func name(_ id: UInt32) -> String {
        switch id {
        case registerAppInterface: "RegisterAppInterface"
        case unregisterAppInterface: "UnregisterAppInterface"
        case putFile: "PutFile"
        case deleteFile: "DeleteFile"
        case listFiles: "ListFiles"
        case setAppIcon: "SetAppIcon"
        case onHMIStatus: "OnHMIStatus"
        case onAppInterfaceUnregistered: "OnAppInterfaceUnregistered"
        case onPermissionsChange: "OnPermissionsChange"
        case onSystemRequest: "OnSystemRequest"
        case onDriverDistraction: "OnDriverDistraction"
        default: "function \(id)"
        }
    }
}
