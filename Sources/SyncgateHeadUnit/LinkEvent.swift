import NIOCore
import SyncgateSDL

/// What the channel tells the connection, in order.
enum LinkEvent: Sendable {
    case frame(SDLFrame)
    case failed(any Error)
    case closed
}
