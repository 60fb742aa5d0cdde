/// The service a frame belongs to (byte 1 of the header).
public enum ServiceType {
    public static let control: UInt8 = 0x00
    public static let rpc: UInt8 = 0x07
    public static let audio: UInt8 = 0x0A
    public static let video: UInt8 = 0x0B
    /// Bulk data / hybrid: an RPC with binary data (PutFile) may be sent on it; answers come on 0x07.
    public static let bulk: UInt8 = 0x0F
}
