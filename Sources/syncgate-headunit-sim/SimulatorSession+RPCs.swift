import Foundation
import NIOCore
import SyncgateJSON
import SyncgateSDL

/// The RPCs the simulator answers as SDL Core does: RegisterAppInterface, ListFiles, PutFile (chunked, CRC
/// checked), DeleteFile and SetAppIcon.
extension SimulatorSession {
    func rpc(_ message: SDLMessage) throws {
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

    func log(_ request: RPCMessage, _ text: String) {
        SimulatorLog.line("RPC \(request.name) corr=\(request.correlationID) \(text)")
    }

    func register(_ request: RPCMessage, _ params: [String: JSONValue]) {
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
            log(request, "app=\(params["appName"]?.string ?? "?") -> \(code) (fault)")
            respond(to: request, ResultCode(code), info: "Simulated refusal")
            return
        }
        registered = true
        level = "NONE"
        nonePuts = 0
        noneDeletes = 0
        noneLists = 0
        activationScheduled = false
        // Core registers an app that asks for another language, and says so: WRONG_LANGUAGE with success true.
        let desired = params["languageDesired"]?.string ?? "?"
        let shown = params["hmiDisplayLanguageDesired"]?.string ?? "?"
        let code: ResultCode = desired == settings.language && shown == settings.language ? .success : .wrongLanguage
        log(request, "app=\(params["appName"]?.string ?? "?") id=\(params["appID"]?.string ?? "?") lang=\(desired) hmi=\(shown) -> \(code.rawValue)")
        respond(
            to: request, code, success: true,
            extra: [
                "syncMsgVersion": .object(["majorVersion": .int(8), "minorVersion": .int(0), "patchVersion": .int(0)]),
                "language": .string(settings.language), "hmiDisplayLanguage": .string(settings.language),
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
        if settings.openWindow(), let channel {
            // The car drives out of range: the process ends, what was stored stays in the storage folder.
            let seconds = settings.acceptFor
            SimulatorLog.line("WINDOW open for \(seconds)s")
            channel.eventLoop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) {
                SimulatorLog.line("WINDOW closed: the head unit goes away")
                exit(0)
            }
        }
    }

    /// Raises the app to FULL after `seconds`, unless the control port forced a level meanwhile.
    func activate(after seconds: Double) {
        guard let channel, !activationScheduled else { return }
        activationScheduled = true
        let bound = NIOLoopBound(self, eventLoop: channel.eventLoop)
        channel.eventLoop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) {
            if bound.value.settings.forcedLevel == nil { bound.value.setLevel("FULL") }
        }
    }

    /// Core limits an app at level NONE to a few PutFiles, DeleteFiles and ListFiles.
    func overNoneLimit(_ counter: inout Int) -> Bool {
        guard level == "NONE" else { return false }
        counter += 1
        guard counter > settings.noneLimit else { return false }
        if settings.activateAfterRefusal >= 0 { activate(after: settings.activateAfterRefusal) }
        return true
    }

    func listFiles(_ request: RPCMessage) {
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

    func putFile(_ request: RPCMessage, _ params: [String: JSONValue]) {
        let name = params["syncFileName"]?.string ?? ""
        let offset = params["offset"]?.int64 ?? 0
        // The received bytes as they are (a slice of the frame): checked and written without a copy.
        var bulk = request.bulk
        let detail = "name=\(name) type=\(params["fileType"]?.string ?? "-") offset=\(offset) bytes=\(bulk.readableBytes) persistent=\(params["persistentFile"]?.bool ?? false)"
        settings.countPut(bytes: bulk.readableBytes)
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
        guard params["syncFileName"]?.string != nil, params["fileType"]?.string != nil else {
            log(request, "\(detail) -> INVALID_DATA (mandatory parameter missing)")
            respond(to: request, .invalidData, info: "syncFileName and fileType are mandatory")
            return
        }
        if name.contains("/") || name.utf8.count > 255 {
            log(request, "\(detail) -> INVALID_DATA (name)")
            respond(to: request, .invalidData, info: "Sync file name contains forbidden symbols.")
            return
        }
        if bulk.readableBytes == 0 {
            log(request, "\(detail) -> INVALID_DATA (empty)")
            respond(to: request, .invalidData, info: "Binary data empty")
            return
        }
        if settings.takeCorruption() {
            // A copy of its own (the frame's bytes are shared), its first byte flipped.
            var corrupted = ByteBufferAllocator().buffer(capacity: bulk.readableBytes)
            corrupted.writeImmutableBuffer(bulk)
            corrupted.setInteger(bulk.getInteger(at: bulk.readerIndex, as: UInt8.self)! ^ 0xFF, at: corrupted.readerIndex)
            bulk = corrupted
            SimulatorLog.line("FAULT corrupted the data of \(name) at offset \(offset)")
        }
        var computed = CRC32()
        computed.update(bulk)
        if let crc = params["crc"]?.int64, UInt32(truncatingIfNeeded: crc) != computed.value {
            log(request, "\(detail) -> CORRUPTED_DATA")
            respond(to: request, .corruptedData, info: "CRC Check on file failed. File upload has been cancelled, please retry.")
            return
        }
        let existing = offset == 0 ? (store.size(of: name) ?? 0) : 0
        if Int64(bulk.readableBytes) - existing > store.spaceAvailable() {
            log(request, "\(detail) -> OUT_OF_MEMORY")
            respond(to: request, .outOfMemory, info: "Not enough space", extra: ["spaceAvailable": .int(store.spaceAvailable())])
            return
        }
        switch store.write(name, offset: offset, bytes: bulk, persistent: params["persistentFile"]?.bool ?? false) {
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

    func deleteFile(_ request: RPCMessage, _ params: [String: JSONValue]) {
        guard let name = params["syncFileName"]?.string else {
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

    func setAppIcon(_ request: RPCMessage, _ params: [String: JSONValue]) {
        let name = params["syncFileName"]?.string ?? ""
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
