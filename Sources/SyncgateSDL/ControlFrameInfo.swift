/// The frame info byte of control frames.
public enum ControlFrameInfo {
    public static let heartbeat: UInt8 = 0x00
    public static let startService: UInt8 = 0x01
    public static let startServiceACK: UInt8 = 0x02
    public static let startServiceNAK: UInt8 = 0x03
    public static let endService: UInt8 = 0x04
    public static let endServiceACK: UInt8 = 0x05
    public static let endServiceNAK: UInt8 = 0x06
    public static let heartbeatACK: UInt8 = 0xFF

    public static func name(_ info: UInt8) -> String {
        switch info {
        case heartbeat: "Heartbeat"
        case startService: "StartService"
        case startServiceACK: "StartServiceACK"
        case startServiceNAK: "StartServiceNAK"
        case endService: "EndService"
        case endServiceACK: "EndServiceACK"
        case endServiceNAK: "EndServiceNAK"
        case heartbeatACK: "HeartbeatACK"
        default: "control(0x\(String(info, radix: 16)))"
        }
    }
}
