#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import Synchronization

/// What a new connection must show before the gateway spends anything on it, when every place is taken (Linux).
///
/// A flood of connections costs the gateway for each one it accepts: a channel, an HTTP pipeline, a task, a place
/// taken from an idle connection, a close. Under 2,000 connections replaced as fast as they are closed that was a
/// core's worth of work, and a real request waited behind the flood in the kernel's accept queue (issue 26: `/healthz`
/// in up to 1.3 s). Two things keep the flood out cheaply:
/// - the listening socket has `TCP_DEFER_ACCEPT` (``install(on:deferring:)``): the kernel hands over a connection only
///   once its first bytes arrived (or the time is up), so connections that never send anything do not reach the
///   gateway at all for that time, and one that comes has its first segment with it;
/// - while every place is taken, a connection whose first bytes cannot hold a request head (fewer than
///   ``minimumHead``, read from the kernel's `TCP_INFO` without reading the socket) is closed the moment it is
///   accepted, by a handler at the front of the listener's pipeline (``Handler``): no HTTP pipeline, no task, no
///   place taken from an idle connection. A real client sends its whole head as it connects; an idle or trickling
///   one is what the place-taking would otherwise be spent on.
/// Below the limit, and where either is unavailable (macOS, Linux before 4.1), every connection gets a place as
/// before (``ConnectionLimiter``). Every connection let in gets a fixed socket send buffer (``ConnectionLimits``).
final class ConnectionDoor: Sendable {
    /// The shortest request head HTTP/1 allows is 18 bytes (`GET / HTTP/1.0\r\n\r\n`).
    static let minimumHead: UInt64 = 16

    let limiter: ConnectionLimiter
    let sendBuffer: Int
    /// Whether the listener defers accepting until data: only then does a connection come with its first bytes.
    private let screening = Atomic<Bool>(false)

    init(limiter: ConnectionLimiter, sendBuffer: Int) {
        self.limiter = limiter
        self.sendBuffer = sendBuffer
    }

    var isScreening: Bool { screening.load(ordering: .relaxed) }

    /// Puts the door in front of a listening channel: `TCP_DEFER_ACCEPT` for `wait` (Linux; the kernel rounds it
    /// up to its SYN-ACK retransmissions: 10 s makes about 15), and, when that could be set, the screening.
    func install(on listener: any Channel, deferring wait: TimeAmount) async {
        #if os(Linux)
        let seconds = max(1, Int(wait.nanoseconds / 1_000_000_000))
        let option = ChannelOptions.Types.SocketOption(level: .tcp, name: .init(rawValue: TCP_DEFER_ACCEPT))
        let deferring = (try? await listener.setOption(option, value: seconds).get()) != nil
        screening.store(deferring && TCPInfo.available, ordering: .relaxed)
        #endif
        let door = self
        try? await listener.eventLoop.submit {
            try listener.pipeline.syncOperations.addHandler(Handler(door: door), position: .first)
        }.get()
    }

    /// Whether a connection just accepted may go on; when not, it has been counted and must be closed. On the
    /// listener's event loop, which is the connection's too.
    func letsIn(_ channel: any Channel) -> Bool {
        guard isScreening, channel.eventLoop.inEventLoop, limiter.isFull, let received = TCPInfo.bytesReceived(channel) else { return true }
        if received >= ConnectionDoor.minimumHead { return true }
        limiter.turnedAwayAtTheDoor()
        return false
    }

    /// The first handler of the listener's pipeline: each accepted connection is let in (with its send buffer set)
    /// or closed there.
    final class Handler: ChannelInboundHandler {
        typealias InboundIn = any Channel
        typealias InboundOut = any Channel

        let door: ConnectionDoor

        init(door: ConnectionDoor) { self.door = door }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let connection = unwrapInboundIn(data)
            guard door.letsIn(connection) else {
                connection.close(promise: nil)
                return
            }
            if connection.eventLoop.inEventLoop {
                try? connection.syncOptions?.setOption(ChannelOptions.socketOption(.so_sndbuf),
                                                        value: ChannelOptions.Types.SocketOption.Value(door.sendBuffer))
            } else {
                connection.setOption(ChannelOptions.socketOption(.so_sndbuf), value: ChannelOptions.Types.SocketOption.Value(door.sendBuffer))
                    .whenFailure { _ in }
            }
            context.fireChannelRead(data)
        }
    }
}

@available(*, unavailable)
extension ConnectionDoor.Handler: Sendable {}

/// The bytes a TCP connection has received so far, from the kernel's `struct tcp_info` (Linux 4.1 and later).
enum TCPInfo {
    /// `struct tcp_info` of `<linux/tcp.h>` up to `tcpi_segs_in` (144 bytes); `tcpi_bytes_received` is its 17th
    /// 64-bit word (byte 128). Glibc's own `struct tcp_info` stops before it.
    struct Raw: Sendable {
        var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                    UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
            = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var bytesReceived: UInt64 { words.16 }
    }

    /// Whether the kernel fills `tcpi_bytes_received` (Linux 4.1 and later; the field reads 0 before).
    static let available: Bool = {
        #if os(Linux)
        var name = utsname()
        guard uname(&name) == 0 else { return false }
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let numbers = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        guard numbers.count == 2 else { return false }
        return (numbers[0], numbers[1]) >= (4, 1)
        #else
        return false
        #endif
    }()

    /// The bytes `channel` has received (read or not); nil when they cannot be known. On the channel's event loop.
    static func bytesReceived(_ channel: any Channel) -> UInt64? {
        #if os(Linux)
        guard available, let provider = channel as? any SocketOptionProvider else { return nil }
        var received: UInt64?
        // On the channel's loop the option is read at once: the future is already complete.
        let info: EventLoopFuture<Raw> = provider.unsafeGetSocketOption(level: .tcp, name: .tcp_info)
        info.assumeIsolated().whenSuccess { received = $0.bytesReceived }
        return received
        #else
        return nil
        #endif
    }
}
