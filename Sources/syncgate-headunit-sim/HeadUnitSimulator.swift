import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import SyncgateSDL

/// `syncgate-headunit-sim`: a SmartDeviceLink head unit on TCP that behaves like SDL Core 8.2 for file sync
/// and injects faults on command. Files land in `--storage`.
struct HeadUnitSimulator: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncgate-headunit-sim",
        abstract: "A simulated SmartDeviceLink head unit (SDL Core 8.2 behaviour) for tests and trials.")

    @Option(help: "Address to listen on (loopback only).") var host = "127.0.0.1"
    @Option(help: "TCP port (0 picks a free one; the chosen port is printed).") var port = 12345
    @Option(help: "Folder the received files are stored in (created if missing; files already there count as stored).")
    var storage: String
    @Option(help: "Per-app storage quota in bytes.") var quota: Int64 = 100 * 1024 * 1024
    @Option(help: "Largest frame payload announced in the StartService ACK (mtu).") var mtu = 131_072
    @Option(help: "Highest protocol major version to negotiate (4 or 5).") var protocolVersion: UInt8 = 5
    @Option(help: "Seconds after registration before the HMI raises the app from NONE to FULL (negative: never).")
    var activateAfter = 0.0
    @Option(help: ArgumentHelp(
        "Seconds after the first request refused at level NONE before the HMI raises the app to FULL, as a user "
            + "opening the app would (negative: never). Unlike --activate-after, this does not depend on how fast "
            + "the app is.", valueName: "seconds"))
    var activateAfterRefusal = -1.0
    @Option(help: "PutFiles, DeleteFiles and ListFiles allowed at HMI level NONE.") var noneLimit = 5
    @Option(help: "Send a heartbeat every this many seconds (0: never).") var heartbeatInterval = 0.0
    @Option(help: "Delay every RPC response by this many milliseconds.") var delayMs = 0
    @Option(help: "Answer GENERIC_ERROR to the first N PutFiles.") var genericErrors = 0
    @Option(help: "Corrupt the data of the first N PutFiles (they fail the CRC check: CORRUPTED_DATA).")
    var corruptPuts = 0
    @Option(help: "Close a connection once it has sent this many bytes (0: never).") var cutAfterBytes = 0
    @Option(help: "How many connections the byte cut applies to.") var cutConnections = 1
    @Option(help: ArgumentHelp(
        "Stop reading each connection, without closing it, once it has sent this many bytes (0: never): a head unit "
            + "that hangs mid-file.", valueName: "bytes"))
    var stallAfterBytes = 0
    @Option(help: ArgumentHelp(
        "Answer every RegisterAppInterface with this result code (DISALLOWED, TOO_MANY_APPLICATIONS, ...) instead of "
            + "registering the app.", valueName: "code"))
    var refuseRegistration: String?
    @Option(help: ArgumentHelp(
        "The head unit's language (and HMI display language): a registration that asks for another is answered "
            + "WRONG_LANGUAGE with success, as Core does.", valueName: "code"))
    var language = "EN-US"
    @Flag(help: "Never answer StartService (a head unit whose HMI is not ready).") var noAck = false
    @Flag(help: "Answer SetAppIcon with UNSUPPORTED_RESOURCE, as a Core without UI does.") var noUi = false
    @Option(help: "Also listen for control commands on this port (0: none).") var controlPort = 0
    @Option(help: "Seconds the head unit stays after the first app registers; then it exits, as a car leaving range (0: it stays).")
    var acceptFor = 0.0
    @Flag(help: "Log every frame.") var verbose = false

    func validate() throws {
        guard host == "127.0.0.1" || host == "localhost" || host == "::1" else {
            throw ValidationError("--host must be a loopback address")
        }
        guard (4...5).contains(protocolVersion) else { throw ValidationError("--protocol-version must be 4 or 5") }
        guard mtu >= 1024, mtu <= 16 * 1024 * 1024 else { throw ValidationError("--mtu must be between 1024 and 16777216") }
        guard acceptFor >= 0 else { throw ValidationError("--accept-for must not be negative") }
        guard stallAfterBytes >= 0 else { throw ValidationError("--stall-after-bytes must not be negative") }
        if let code = refuseRegistration {
            guard !code.isEmpty, code.allSatisfy({ $0.isUppercase || $0 == "_" }), code != "SUCCESS" else {
                throw ValidationError("--refuse-registration takes a result code other than SUCCESS, e.g. DISALLOWED")
            }
        }
    }

    func run() throws {
        let settings = SimulatorSettings(
            protocolVersion: protocolVersion, mtu: mtu, noACK: noAck, noUI: noUi, activateAfter: activateAfter,
            activateAfterRefusal: activateAfterRefusal, noneLimit: noneLimit, heartbeatInterval: heartbeatInterval,
            delayMilliseconds: delayMs, genericErrors: genericErrors, corruptPuts: corruptPuts,
            cutAfterBytes: cutAfterBytes, cutConnections: cutConnections, refuseRegistration: refuseRegistration,
            language: language, acceptFor: acceptFor, verbose: verbose)
        let store = try FileStore(folder: URL(fileURLWithPath: storage), quota: quota)
        let registry = SessionRegistry()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // Frames may be as large as the mtu; allow the 12-byte header's worth of slack a v1 peer might add.
        let maxPayload = mtu
        let stallAfterBytes = self.stallAfterBytes
        let server = try ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            // Reads of up to 256 KiB (NIO's default stops at 64 KiB): a 128 KiB frame in one or two reads, not
            // three or more appended to each other.
            .childChannelOption(
                ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 256 * 1024))
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteCutter(settings: settings))
                    if stallAfterBytes > 0 { try channel.pipeline.syncOperations.addHandler(ByteStaller(budget: stallAfterBytes)) }
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(SDLFrameDecoder(maxPayload: maxPayload)))
                    try channel.pipeline.syncOperations.addHandler(
                        SimulatorSession(settings: settings, store: store, registry: registry))
                }
            }
            .bind(host: host, port: port).wait()
        let actualPort = server.localAddress?.port ?? port
        var control: Channel?
        if controlPort != 0 {
            control = try ServerBootstrap(group: group)
                .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ControlHandler(settings: settings, store: store, registry: registry))
                    }
                }
                .bind(host: host, port: controlPort).wait()
        }
        let banner = "syncgate-headunit-sim listening on \(host):\(actualPort)"
            + (control.map { " control \($0.localAddress?.port ?? 0)" } ?? "") + " storage \(storage)\n"
        FileHandle.standardOutput.write(Data(banner.utf8))
        try server.closeFuture.wait()
    }
}
