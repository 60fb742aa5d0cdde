import Foundation
import NIOCore
import SyncgateSDL

/// One connection to the simulated head unit: behaves like SDL Core 8.2 as far as file sync is concerned
/// (see ../shared/docs/sdl-head-unit.md), with the faults the settings ask for.
final class SimulatorSession: ChannelInboundHandler {
    typealias InboundIn = SDLFrame

    let settings: SimulatorSettings
    let store: FileStore
    let registry: SessionRegistry
    private var channel: Channel?
    var sessionChannel: Channel? { channel }
    var isRegistered: Bool { registered }
    func forgetRegistration() {
        registered = false
        level = "NONE"
    }
    private var assembler: MessageAssembler
    private var version: UInt8 = 1
    private let sessionID: UInt8 = 1
    private var hashID: Int32 = 0
    private var nextMessageID: UInt32 = 1
    private var started = false
    private var registered = false
    private var level = "NONE"
    private var nonePuts = 0
    private var noneDeletes = 0
    private var noneLists = 0
    private var activationScheduled = false
    private var malformed: [NIODeadline] = []
    private var heartbeatTask: RepeatedTask?

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
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
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
    private func noteMalformed(_ error: any Error, context: ChannelHandlerContext) {
        SimulatorLog.line("MALFORMED \(error)")
        let now = NIODeadline.now()
        malformed = malformed.filter { now - $0 < .seconds(1) } + [now]
        if malformed.count >= 10 {
            SimulatorLog.line("MALFORMED 10 frames within a second: disconnecting")
            context.close(promise: nil)
        }
    }

    // MARK: Control frames

    private func control(_ message: SDLMessage) {
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

    private func startService(_ message: SDLMessage) {
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

    private func endService(_ message: SDLMessage) {
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

    private func takeMessageID() -> UInt32 {
        defer { nextMessageID &+= 1 }
        return nextMessageID
    }

    private func write(_ frames: [SDLFrame], delayed: Bool = false) {
        guard let channel else { return }
        var buffer = channel.allocator.buffer(capacity: frames.reduce(0) { $0 + 12 + $1.payload.readableBytes })
        for frame in frames { frame.write(to: &buffer) }
        let delay = delayed ? settings.delayMilliseconds : 0
        if delay > 0 {
            let out = buffer
            channel.eventLoop.scheduleTask(in: .milliseconds(Int64(delay))) { channel.writeAndFlush(out, promise: nil) }
        } else {
            channel.writeAndFlush(buffer, promise: nil)
        }
    }

    private func send(_ rpc: RPCMessage, delayed: Bool = true) {
        let frames = MessageFragmenter.frames(
            version: version, serviceType: ServiceType.rpc, sessionID: sessionID, messageID: takeMessageID(),
            payload: rpc.encoded(), maxPayload: settings.mtu)
        write(frames, delayed: delayed)
    }

    private func respond(
        to request: RPCMessage, _ code: ResultCode, info: String? = nil, extra: [String: JSONValue] = [:]
    ) {
        var params = extra
        params["success"] = .bool(code.isSuccess)
        params["resultCode"] = .string(code.rawValue)
        if let info { params["info"] = .string(info) }
        let json = (try? prettyJSON(params)) ?? Array("{}".utf8)
        send(RPCMessage(type: .response, functionID: request.functionID, correlationID: request.correlationID, json: json))
    }

    /// Core's JSON is pretty-printed; so is the simulator's, so clients parse rather than compare.
    private func prettyJSON(_ params: [String: JSONValue]) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(JSONValue.object(params)))
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

    // MARK: RPCs

    private func rpc(_ message: SDLMessage) throws {
        guard started else {
            SimulatorLog.line("DROP RPC before StartService")
            return
        }
        let request = try RPCMessage(decoding: message.payload)
        guard request.type == .request else { return }
        let params: [String: JSONValue]
        do {
            params = try request.parameters()
        } catch {
            SimulatorLog.line("RPC \(request.name) corr=\(request.correlationID) bad JSON -> INVALID_DATA")
            respond(to: request, .invalidData, info: "Invalid JSON")
            return
        }
        if request.functionID != FunctionID.registerAppInterface && !registered {
            log(request, "-> APPLICATION_NOT_REGISTERED")
            respond(to: request, .applicationNotRegistered)
            return
        }
        switch request.functionID {
        case FunctionID.registerAppInterface: register(request, params)
        case FunctionID.unregisterAppInterface:
            registered = false
            level = "NONE"
            log(request, "-> SUCCESS")
            respond(to: request, .success)
        case FunctionID.listFiles: listFiles(request)
        case FunctionID.putFile: putFile(request, params)
        case FunctionID.deleteFile: deleteFile(request, params)
        case FunctionID.setAppIcon: setAppIcon(request, params)
        default:
            log(request, "-> UNSUPPORTED_REQUEST")
            respond(to: request, .unsupportedRequest)
        }
    }

    private func log(_ request: RPCMessage, _ text: String) {
        SimulatorLog.line("RPC \(request.name) corr=\(request.correlationID) \(text)")
    }

    private func register(_ request: RPCMessage, _ params: [String: JSONValue]) {
        if registered {
            log(request, "-> APPLICATION_REGISTERED_ALREADY")
            respond(to: request, .applicationRegisteredAlready)
            return
        }
        let mandatory = ["syncMsgVersion", "appName", "isMediaApplication", "languageDesired", "hmiDisplayLanguageDesired", "appID"]
        let missing = mandatory.filter { params[$0] == nil }
        guard missing.isEmpty else {
            log(request, "missing \(missing) -> INVALID_DATA")
            respond(to: request, .invalidData, info: "missing mandatory parameters: \(missing.joined(separator: ", "))")
            return
        }
        if let code = settings.refuseRegistration {
            log(request, "app=\(params["appName"]?.stringValue ?? "?") -> \(code) (fault)")
            respond(to: request, ResultCode(code), info: "Simulated refusal")
            return
        }
        registered = true
        level = "NONE"
        nonePuts = 0
        noneDeletes = 0
        noneLists = 0
        activationScheduled = false
        log(request, "app=\(params["appName"]?.stringValue ?? "?") id=\(params["appID"]?.stringValue ?? "?") -> SUCCESS")
        respond(
            to: request, .success,
            extra: [
                "syncMsgVersion": .object(["majorVersion": .int(8), "minorVersion": .int(0), "patchVersion": .int(0)]),
                "language": .string("EN-US"), "hmiDisplayLanguage": .string("EN-US"),
                "systemSoftwareVersion": .string("syncgate-sim"),
            ])
        notify(
            FunctionID.onHMIStatus,
            [
                "hmiLevel": .string("NONE"), "audioStreamingState": .string("NOT_AUDIBLE"),
                "systemContext": .string("MAIN"), "videoStreamingState": .string("NOT_STREAMABLE"), "windowID": .int(0),
            ])
        if let forced = settings.forcedLevel {
            setLevel(forced)
        } else if settings.activateAfter >= 0 {
            activate(after: settings.activateAfter)
        }
    }

    /// Raises the app to FULL after `seconds`, unless the control port forced a level meanwhile.
    private func activate(after seconds: Double) {
        guard let channel, !activationScheduled else { return }
        activationScheduled = true
        let bound = NIOLoopBound(self, eventLoop: channel.eventLoop)
        channel.eventLoop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) {
            if bound.value.settings.forcedLevel == nil { bound.value.setLevel("FULL") }
        }
    }

    /// Core limits an app at level NONE to a few PutFiles, DeleteFiles and ListFiles.
    private func overNoneLimit(_ counter: inout Int) -> Bool {
        guard level == "NONE" else { return false }
        counter += 1
        guard counter > settings.noneLimit else { return false }
        if settings.activateAfterRefusal >= 0 { activate(after: settings.activateAfterRefusal) }
        return true
    }

    private func listFiles(_ request: RPCMessage) {
        if overNoneLimit(&noneLists) {
            log(request, "-> REJECTED (level NONE)")
            respond(to: request, .rejected, info: "Too many requests from the app with NONE HMI level")
            return
        }
        let names = Array(store.names().prefix(1000))
        var extra: [String: JSONValue] = ["spaceAvailable": .int(store.spaceAvailable())]
        if !names.isEmpty { extra["filenames"] = .array(names.map(JSONValue.string)) }
        log(request, "\(names.count) files -> SUCCESS")
        respond(to: request, .success, extra: extra)
    }

    private func putFile(_ request: RPCMessage, _ params: [String: JSONValue]) {
        let name = params["syncFileName"]?.stringValue ?? ""
        let offset = params["offset"]?.intValue ?? 0
        var bulk = request.bulk.getBytes(at: request.bulk.readerIndex, length: request.bulk.readableBytes) ?? []
        let detail = "name=\(name) type=\(params["fileType"]?.stringValue ?? "-") offset=\(offset) bytes=\(bulk.count) persistent=\(params["persistentFile"]?.boolValue ?? false)"
        settings.countPut(bytes: bulk.count)
        if offset == 0 && overNoneLimit(&nonePuts) {
            log(request, "\(detail) -> REJECTED (level NONE)")
            respond(to: request, .rejected, info: "Too many requests from the app with NONE HMI level")
            return
        }
        if settings.takeGenericError() {
            log(request, "\(detail) -> GENERIC_ERROR (fault)")
            respond(to: request, .genericError, info: "Simulated failure", extra: ["spaceAvailable": .int(store.spaceAvailable())])
            return
        }
        guard params["syncFileName"]?.stringValue != nil, params["fileType"]?.stringValue != nil else {
            log(request, "\(detail) -> INVALID_DATA (mandatory parameter missing)")
            respond(to: request, .invalidData, info: "syncFileName and fileType are mandatory")
            return
        }
        if name.contains("/") || name.utf8.count > 255 {
            log(request, "\(detail) -> INVALID_DATA (name)")
            respond(to: request, .invalidData, info: "Sync file name contains forbidden symbols.")
            return
        }
        if bulk.isEmpty {
            log(request, "\(detail) -> INVALID_DATA (empty)")
            respond(to: request, .invalidData, info: "Binary data empty")
            return
        }
        if settings.takeCorruption() {
            bulk[0] ^= 0xFF
            SimulatorLog.line("FAULT corrupted the data of \(name) at offset \(offset)")
        }
        if let crc = params["crc"]?.intValue, UInt32(truncatingIfNeeded: crc) != CRC32.checksum(bulk) {
            log(request, "\(detail) -> CORRUPTED_DATA")
            respond(to: request, .corruptedData, info: "CRC Check on file failed. File upload has been cancelled, please retry.")
            return
        }
        let existing = offset == 0 ? (store.size(of: name) ?? 0) : 0
        if Int64(bulk.count) - existing > store.spaceAvailable() {
            log(request, "\(detail) -> OUT_OF_MEMORY")
            respond(to: request, .outOfMemory, info: "Not enough space", extra: ["spaceAvailable": .int(store.spaceAvailable())])
            return
        }
        switch store.write(name, offset: offset, bytes: bulk, persistent: params["persistentFile"]?.boolValue ?? false) {
        case .ok:
            log(request, "\(detail) -> SUCCESS")
            respond(to: request, .success, info: "File was downloaded", extra: ["spaceAvailable": .int(store.spaceAvailable())])
        case .offsetMismatch:
            log(request, "\(detail) -> INVALID_DATA (offset)")
            respond(to: request, .invalidData, info: "Can't save file", extra: ["spaceAvailable": .int(store.spaceAvailable())])
        case .failed:
            log(request, "\(detail) -> GENERIC_ERROR")
            respond(to: request, .genericError, info: "Can't save file", extra: ["spaceAvailable": .int(store.spaceAvailable())])
        }
    }

    private func deleteFile(_ request: RPCMessage, _ params: [String: JSONValue]) {
        guard let name = params["syncFileName"]?.stringValue else {
            log(request, "-> INVALID_DATA")
            respond(to: request, .invalidData, info: "syncFileName is mandatory")
            return
        }
        if overNoneLimit(&noneDeletes) {
            log(request, "name=\(name) -> REJECTED (level NONE)")
            respond(to: request, .rejected, info: "Too many requests from the app with NONE HMI level")
            return
        }
        let deleted = !name.contains("/") && store.delete(name)
        log(request, "name=\(name) -> \(deleted ? "SUCCESS" : "REJECTED")")
        respond(to: request, deleted ? .success : .rejected, extra: ["spaceAvailable": .int(store.spaceAvailable())])
    }

    private func setAppIcon(_ request: RPCMessage, _ params: [String: JSONValue]) {
        let name = params["syncFileName"]?.stringValue ?? ""
        guard !name.isEmpty, !name.contains("/"), store.exists(name) else {
            log(request, "name=\(name) -> INVALID_DATA")
            respond(to: request, .invalidData)
            return
        }
        if settings.noUI {
            log(request, "name=\(name) -> UNSUPPORTED_RESOURCE")
            respond(to: request, .unsupportedResource, info: "UI is not supported by system")
            return
        }
        log(request, "name=\(name) -> SUCCESS")
        respond(to: request, .success)
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
