/// The RPC type in the top four bits of the RPC binary header.
public enum RPCType: UInt8, Sendable, Hashable {
    case request = 0
    case response = 1
    case notification = 2
}
