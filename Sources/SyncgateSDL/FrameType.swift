/// The frame type in the low three bits of a frame's first byte.
public enum FrameType: UInt8, Sendable, Hashable {
    case control = 0
    case single = 1
    case first = 2
    case consecutive = 3
}
