import Foundation
import Logging
import NIOCore
import NIOPosix
import SyncgateCore
import SyncgateJSON
import SyncgateSDL

/// The session's steps: StartService, RegisterAppInterface, the listing kept in step with what is stored, and the
/// close (UnregisterAppInterface, EndService) within its budget.
extension SDLConnection {
    /// StartService for RPC with a v1 header and BSON `{protocolVersion: "5.4.1"}`; accepts an ACK in any
    /// version from 2 to 5 (a v4 head unit answers without BSON and puts the hash id in the message id).
    func startService() async throws {
        let payload = BSONDocument([.init("protocolVersion", .string("5.4.1"))]).encodedBuffer()
        let answer = try await awaitControl(
            [ControlFrameInfo.startServiceACK, ControlFrameInfo.startServiceNAK], timeout: responseTimeout,
            timeoutError: .retryable(
                "no StartService ACK from the head unit at \(endpoint) within \(timeoutText) (its HMI may not be ready)",
                code: "no-ack")
        ) {
            let frame = SDLFrame.control(
                version: 1, serviceType: ServiceType.rpc, info: ControlFrameInfo.startService, sessionID: 0, messageID: 0,
                payload: payload)
            var buffer = channel.allocator.buffer(capacity: 8 + payload.readableBytes)
            frame.write(to: &buffer)
            channel.writeAndFlush(buffer, promise: nil)
        }
        if answer.frameInfo == ControlFrameInfo.startServiceNAK {
            var reason = "no reason given"
            if answer.payload.readableBytes > 0, let doc = try? BSONDocument(decoding: answer.payload) {
                reason = doc["reason"]?.stringValue ?? doc.description
            }
            let error = DestinationError.retryable("the head unit refused to start the RPC service (NAK: \(reason))", code: "NAK")
            markClosed(error)
            throw error
        }
        guard answer.version >= 2 else {
            let error = DestinationError.permanent("the head unit answered with protocol version 1, which cannot carry files", code: "protocol-version")
            markClosed(error)
            throw error
        }
        version = answer.version
        sessionID = answer.sessionID
        if version >= 5 {
            let doc: BSONDocument
            do {
                doc = try BSONDocument(decoding: answer.payload)
            } catch {
                let failure = DestinationError.retryable("the head unit's StartService ACK is unreadable: \(error)", code: "protocol-error")
                markClosed(failure)
                throw failure
            }
            hashID = Int32(truncatingIfNeeded: doc["hashId"]?.intValue ?? 0)
            if let announced = doc["mtu"]?.intValue, announced > 0 {
                mtu = Int(min(announced, Int64(SDLConnection.maxOutboundFramePayload)))
            }
        } else {
            hashID = Int32(bitPattern: answer.messageID)
            mtu = version >= 3 ? SDLConnection.maxOutboundFramePayload : 1_488
        }
        guard mtu >= 1024 else {
            let failure = DestinationError.permanent("the head unit's MTU of \(mtu) bytes is too small", code: "protocol-error")
            markClosed(failure)
            throw failure
        }
        logger.debug("SDL session \(sessionID) protocol v\(version) mtu \(mtu) with \(endpoint)")
    }

    /// RegisterAppInterface. A refusal is the destination's: ``ResultClassifier/registrationError(_:info:app:)``
    /// says which refusals block the app and which only make the head unit unavailable for now.
    func register(app: HeadUnitConfig.App, language: String, hmiLanguage: String) async throws {
        let response = try await request(
            FunctionID.registerAppInterface,
            [
                "syncMsgVersion": .object(["majorVersion": .int(8), "minorVersion": .int(0), "patchVersion": .int(0)]),
                "appName": .string(app.name), "isMediaApplication": .bool(false), "languageDesired": .string(language),
                "hmiDisplayLanguageDesired": .string(hmiLanguage), "appID": .string(app.id),
            ])
        guard response.isSuccess else {
            let error = ResultClassifier.registrationError(response.code, info: response.info, app: app.name)
            markClosed(error)
            throw error
        }
        if response.code == .wrongLanguage {
            // Registered all the same (success: true); files do not depend on the language.
            let spoken = response.parameters["language"]?.string ?? "?"
            let shown = response.parameters["hmiDisplayLanguage"]?.string ?? "?"
            logger.info("the head unit speaks \(spoken) and shows \(shown), not \(language) / \(hmiLanguage) as configured; registered anyway")
        }
    }

    /// ListFiles: the truth about what the head unit holds for this app.
    func refreshListing() async throws {
        let response = try await request(FunctionID.listFiles, [:])
        guard response.code.isSuccess else {
            noteNoneRejectionIf(response.code)
            throw ResultClassifier.error(
                response.code, info: response.info, function: "ListFiles", subject: "", hmiLevel: hmiLevel)
        }
        let names = (response.parameters["filenames"]?.array ?? []).compactMap(\.string)
        files = Set(names)
        listingIsComplete = names.count < SDLConnection.listFilesLimit
        spaceAvailable = response.parameters["spaceAvailable"]?.int64
    }

    func noteStored(_ name: String, spaceAvailable: Int64?) {
        files.insert(name)
        if let spaceAvailable { self.spaceAvailable = spaceAvailable }
    }

    func noteDeleted(_ name: String, spaceAvailable: Int64?) {
        files.remove(name)
        if let spaceAvailable { self.spaceAvailable = spaceAvailable }
    }

    func noteNoneRejectionIf(_ code: ResultCode) {
        if hmiLevel == "NONE" && (code == .rejected || code == .disallowed || code == .userDisallowed) { noneRejected = true }
    }

    /// UnregisterAppInterface, then EndService with the hash id, then close. Waits at most ``closeBudget`` in all
    /// (plus a quarter second for the EndService ACK when the budget went on an answered unregistration),
    /// and not at all for a head unit that has not answered what it was already asked (requests still pending, as
    /// after a cancelled upload), that stopped reading, or when the calling task is cancelled; errors are ignored.
    func close() async {
        guard closedReason == nil else { return }
        let deadline = ContinuousClock.now + min(responseTimeout, SDLConnection.closeBudget)
        let unanswered = !pending.isEmpty
        func remaining() -> Duration? {
            let left = deadline - ContinuousClock.now
            return left > .milliseconds(1) && !unanswered && channel.isWritable && !Task.isCancelled ? left : nil
        }
        var unregistered = false
        if let limit = remaining(), let future = try? await send(FunctionID.unregisterAppInterface, [:], timeout: limit) {
            unregistered = (try? await FutureWait.value(of: future)) != nil
        }
        // EndService goes out whenever the head unit still reads, even when its answer to UnregisterAppInterface
        // used up the budget (a loaded machine): a short wait for the ACK then, none if it did not answer at all.
        if closedReason == nil, !unanswered, channel.isWritable, !Task.isCancelled {
            let limit = remaining() ?? (unregistered ? .milliseconds(250) : .milliseconds(5))
            var payload = ByteBuffer()
            if version >= 5 {
                payload = BSONDocument([.init("hashId", .int32(hashID))]).encodedBuffer()
            } else {
                payload.writeInteger(hashID)
            }
            _ = try? await awaitControl(
                [ControlFrameInfo.endServiceACK, ControlFrameInfo.endServiceNAK], timeout: limit,
                timeoutError: .retryable("no EndService ACK", code: "timeout")
            ) {
                writeControl(service: ServiceType.rpc, info: ControlFrameInfo.endService, payload: payload)
            }
        }
        markClosed(.retryable("the session with the head unit was ended", code: "closed"))
    }
}
