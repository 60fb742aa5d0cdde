import Foundation
import NIOCore
import SyncgateJSON
import SyncgateSDL

/// One connection to the simulated head unit: behaves like SDL Core 8.2 as far as file sync is concerned
/// (see ../shared/docs/sdl-head-unit.md), with the faults the settings ask for.
final class SimulatorSession: ChannelInboundHandler {
    typealias InboundIn = SDLFrame

    let settings: SimulatorSettings
    let store: FileStore
    let registry: SessionRegistry
    var channel: Channel?
    var sessionChannel: Channel? { channel }
    var isRegistered: Bool { registered }
    func forgetRegistration() {
        registered = false
        level = "NONE"
    }
    var assembler: MessageAssembler
    var version: UInt8 = 1
    let sessionID: UInt8 = 1
    var hashID: Int32 = 0
    var nextMessageID: UInt32 = 1
    var started = false
    var registered = false
    var level = "NONE"
    var nonePuts = 0
    var noneDeletes = 0
    var noneLists = 0
    var activationScheduled = false
    var malformed: [NIODeadline] = []
    var heartbeatTask: RepeatedTask?
    /// Between a read's first frame and its ``channelReadComplete(context:)``: answers wait for one flush.
    var reading = false
    var unflushed = false

    init(settings: SimulatorSettings, store: FileStore, registry: SessionRegistry) {
        self.settings = settings
        self.store = store
        self.registry = registry
        self.assembler = MessageAssembler(maxMessageSize: 32 * 1024 * 1024)
    }

    func channelActive(context: ChannelHandlerContext) {
        channel = context.channel
        registry.add(NIOLoopBound(self, eventLoop: context.eventLoop), id: ObjectIdentifier(self))
        SimulatorLog.line("CONNECT \(context.remoteAddress?.description ?? "?")")
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        registry.remove(ObjectIdentifier(self))
        heartbeatTask?.cancel()
        SimulatorLog.line("DISCONNECT")
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        SimulatorLog.line("ERROR \(error): closing")
        context.flush()
        context.close(promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        reading = false
        if unflushed {
            unflushed = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reading = true
        let frame = Self.unwrapInboundIn(data)
        if settings.verbose { SimulatorLog.line("FRAME \(frame.header)") }
        if frame.header.frameType != .control && frame.header.messageID == 0 && frame.header.version > 1 {
            // Core silently drops a non-control frame with message id 0.
            SimulatorLog.line("DROP frame with message id 0")
            return
        }
        do {
            guard let message = try assembler.add(frame) else { return }
            if message.isControl {
                control(message)
            } else if message.serviceType == ServiceType.rpc || message.serviceType == ServiceType.bulk {
                try rpc(message)
            }
        } catch {
            noteMalformed(error, context: context)
        }
    }

    /// Core disconnects a peer that sends 10 malformed frames within a second.
    func noteMalformed(_ error: any Error, context: ChannelHandlerContext) {
        SimulatorLog.line("MALFORMED \(error)")
        let now = NIODeadline.now()
        malformed = malformed.filter { now - $0 < .seconds(1) } + [now]
        if malformed.count >= 10 {
            SimulatorLog.line("MALFORMED 10 frames within a second: disconnecting")
            context.flush()
            context.close(promise: nil)
        }
    }

    // MARK: Control frames

    func control(_ message: SDLMessage) {
        switch message.frameInfo {
        case ControlFrameInfo.heartbeat:
            sendControl(service: ServiceType.control, info: ControlFrameInfo.heartbeatACK)
        case ControlFrameInfo.heartbeatACK:
            settings.countHeartbeatACK()
            SimulatorLog.line("HEARTBEAT-ACK")
        case ControlFrameInfo.startService:
            startService(message)
        case ControlFrameInfo.endService:
            endService(message)
        default:
            SimulatorLog.line("CONTROL ignored \(ControlFrameInfo.name(message.frameInfo))")
        }
    }

    func startService(_ message: SDLMessage) {
        guard message.serviceType == ServiceType.rpc else {
            sendControl(service: message.serviceType, info: ControlFrameInfo.startServiceNAK, version: max(version, 1))
            return
        }
        var requested = "1.0.0"
        if message.payload.readableBytes > 0, let doc = try? BSONDocument(decoding: message.payload),
            let text = doc["protocolVersion"]?.stringValue
        {
            requested = text
        } else if message.version > 1 {
            requested = "\(message.version).0.0"
        }
        SimulatorLog.line("START-SERVICE requested \(requested)")
        if settings.noACK {
            SimulatorLog.line("FAULT no StartService ACK")
            return
        }
        let requestedMajor = UInt8(requested.split(separator: ".").first.flatMap { Int($0) } ?? 1)
        version = min(settings.protocolVersion, max(requestedMajor, 1))
        hashID = Int32.random(in: 1...0x7FFF_FFFF)
        started = true
        var payload = ByteBuffer()
        var messageID: UInt32 = 0
        if version >= 5 {
            payload = BSONDocument([
                .init("protocolVersion", .string("5.4.0")), .init("hashId", .int32(hashID)),
                .init("mtu", .int64(Int64(settings.mtu))), .init("make", .string("SDL")),
                .init("model", .string("Simulator")), .init("modelYear", .string("2026")),
                .init("trim", .string("SE")), .init("systemSoftwareVersion", .string("syncgate-sim")),
            ]).encodedBuffer()
        } else if version >= 2 {
            messageID = UInt32(bitPattern: hashID)
        }
        let frame = SDLFrame.control(
            version: version, serviceType: ServiceType.rpc, info: ControlFrameInfo.startServiceACK, sessionID: sessionID,
            messageID: messageID, payload: payload)
        write([frame])
        if settings.heartbeatInterval > 0, let channel {
            let bound = NIOLoopBound(self, eventLoop: channel.eventLoop)
            heartbeatTask = channel.eventLoop.scheduleRepeatedTask(
                initialDelay: .milliseconds(Int64(settings.heartbeatInterval * 1000)),
                delay: .milliseconds(Int64(settings.heartbeatInterval * 1000))
            ) { _ in
                bound.value.sendControl(service: ServiceType.control, info: ControlFrameInfo.heartbeat)
            }
        }
    }

    func endService(_ message: SDLMessage) {
        var hash: Int64?
        if message.payload.readableBytes == 4 {
            hash = message.payload.getInteger(at: message.payload.readerIndex, as: Int32.self).map(Int64.init)
        } else if message.payload.readableBytes > 0, let doc = try? BSONDocument(decoding: message.payload) {
            hash = doc["hashId"]?.intValue
        }
        let ok = hash == nil || hash == Int64(hashID)
        SimulatorLog.line("END-SERVICE hash \(hash.map(String.init) ?? "none") -> \(ok ? "ACK" : "NAK")")
        sendControl(service: message.serviceType, info: ok ? ControlFrameInfo.endServiceACK : ControlFrameInfo.endServiceNAK)
        if ok {
            started = false
            registered = false
        }
    }

    func sendControl(service: UInt8, info: UInt8, version: UInt8? = nil) {
        let v = version ?? self.version
        let frame = SDLFrame.control(
            version: v, serviceType: service, info: info, sessionID: sessionID, messageID: v > 1 ? takeMessageID() : 0)
        write([frame])
    }

    func takeMessageID() -> UInt32 {
        defer { nextMessageID &+= 1 }
        return nextMessageID
    }

    /// Answers written while frames are being read go out together, flushed once the read is handled
    /// (``channelReadComplete(context:)``): one write to the socket for all the answers to what one read brought.
    func write(_ frames: [SDLFrame], delayed: Bool = false) {
        guard let channel else { return }
        var buffer = channel.allocator.buffer(capacity: frames.reduce(0) { $0 + 12 + $1.payload.readableBytes })
        for frame in frames { frame.write(to: &buffer) }
        let delay = delayed ? settings.delayMilliseconds : 0
        if delay > 0 {
            let out = buffer
            channel.eventLoop.scheduleTask(in: .milliseconds(Int64(delay))) { channel.writeAndFlush(out, promise: nil) }
        } else if reading {
            channel.write(buffer, promise: nil)
            unflushed = true
        } else {
            channel.writeAndFlush(buffer, promise: nil)
        }
    }

    func send(_ rpc: RPCMessage, delayed: Bool = true) {
        let frames = MessageFragmenter.frames(
            version: version, serviceType: ServiceType.rpc, sessionID: sessionID, messageID: takeMessageID(),
            payload: rpc.encoded(), maxPayload: settings.mtu)
        write(frames, delayed: delayed)
    }

    func respond(
        to request: RPCMessage, _ code: ResultCode, success: Bool? = nil, info: String? = nil, extra: [String: JSONValue] = [:]
    ) {
        var params = extra
        params["success"] = .bool(success ?? code.isSuccess)
        params["resultCode"] = .string(code.rawValue)
        if let info { params["info"] = .string(info) }
        let json = (try? prettyJSON(params)) ?? Array("{}".utf8)
        send(RPCMessage(type: .response, functionID: request.functionID, correlationID: request.correlationID, json: json))
    }

    /// Core's JSON is pretty-printed; so is the simulator's, so clients parse rather than compare.
    /// (The project's own writer, in the layout of Foundation's pretty printing: a JSONEncoder per answer cost more
    /// than checking the CRC of a whole chunk.)
    func prettyJSON(_ params: [String: JSONValue]) throws -> [UInt8] {
        Array(JSONText.pretty(.object(sorting: params), sortedKeys: true).utf8)
    }

    func notify(_ functionID: UInt32, _ params: [String: JSONValue]) {
        let json = (try? prettyJSON(params)) ?? Array("{}".utf8)
        send(
            RPCMessage(type: .notification, functionID: functionID, correlationID: RPCMessage.notificationCorrelationID, json: json),
            delayed: false)
    }

    func setLevel(_ newLevel: String) {
        guard registered, newLevel != level else { return }
        level = newLevel
        SimulatorLog.line("HMI-LEVEL \(newLevel)")
        notify(
            FunctionID.onHMIStatus,
            [
                "hmiLevel": .string(newLevel), "audioStreamingState": .string("NOT_AUDIBLE"),
                "systemContext": .string("MAIN"), "videoStreamingState": .string("NOT_STREAMABLE"), "windowID": .int(0),
            ])
    }
}

extension SimulatorSession {
    /// Drops the app's registration (control port "unregister"): with OnAppInterfaceUnregistered, or
    /// silently so that the next request is answered APPLICATION_NOT_REGISTERED.
    func unregisterApp(notify sendNotification: Bool) {
        guard isRegistered else { return }
        forgetRegistration()
        SimulatorLog.line("UNREGISTERED by control\(sendNotification ? "" : " (silently)")")
        if sendNotification { notify(FunctionID.onAppInterfaceUnregistered, ["reason": .string("IGNITION_OFF")]) }
    }

    /// Drops the connection (control port "ignition-off").
    func closeConnection() {
        sessionChannel?.close(promise: nil)
    }
}
