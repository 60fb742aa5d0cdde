/// Why a frame, BSON document or RPC payload was refused. Decoding never traps and never allocates more
/// than the configured limits: anything out of bounds ends here.
public enum SDLError: Error, Sendable, Hashable, CustomStringConvertible {
    case malformedFrame(String)
    case frameTooLarge(size: Int, limit: Int)
    case messageTooLarge(size: Int, limit: Int)
    case malformedBSON(String)
    case malformedRPC(String)
    case malformedJSON(String)

    public var description: String {
        switch self {
        case .malformedFrame(let why): "malformed SDL frame: \(why)"
        case .frameTooLarge(let size, let limit): "SDL frame payload of \(size) bytes exceeds the limit of \(limit)"
        case .messageTooLarge(let size, let limit): "SDL message of \(size) bytes exceeds the limit of \(limit)"
        case .malformedBSON(let why): "malformed BSON: \(why)"
        case .malformedRPC(let why): "malformed RPC payload: \(why)"
        case .malformedJSON(let why): "malformed RPC JSON: \(why)"
        }
    }
}
