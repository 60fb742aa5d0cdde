import NIOCore
import SyncgateSDL

/// What the channel tells the connection, in order.
enum LinkEvent: Sendable {
    /// A whole message (a control frame, a Single frame, or First and Consecutive frames put together).
    case message(SDLMessage)
    case failed(any Error)
    case closed
}
