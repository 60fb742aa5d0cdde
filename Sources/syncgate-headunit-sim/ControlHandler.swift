import Foundation
import NIOCore

/// The simulator's control port: one command per line, answered with one line.
///   level NONE|BACKGROUND|LIMITED|FULL   set (and hold) the HMI level of every session
///   ignition-off                         drop non-persistent files and every connection
///   unregister [silently]                drop the app's registration (with OnAppInterfaceUnregistered or not)
///   generic-errors N | corrupt N | cut-after BYTES [CONNECTIONS] | delay MS
///   stats                                counters
final class ControlHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let settings: SimulatorSettings
    let store: FileStore
    let registry: SessionRegistry
    private var pending = ""

    init(settings: SimulatorSettings, store: FileStore, registry: SessionRegistry) {
        self.settings = settings
        self.store = store
        self.registry = registry
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = Self.unwrapInboundIn(data)
        pending += buffer.readString(length: buffer.readableBytes) ?? ""
        guard pending.utf8.count < 4096 else {
            context.close(promise: nil)
            return
        }
        while let newline = pending.firstIndex(of: "\n") {
            let line = pending[..<newline].trimmingCharacters(in: .whitespacesAndNewlines)
            pending = String(pending[pending.index(after: newline)...])
            let answer = execute(line)
            SimulatorLog.line("CONTROL \(line) -> \(answer)")
            context.writeAndFlush(Self.wrapOutboundOut(ByteBuffer(string: answer + "\n")), promise: nil)
        }
    }

    private func execute(_ line: String) -> String {
        let words = line.split(separator: " ").map(String.init)
        guard let command = words.first else { return "error: empty command" }
        let number = words.count > 1 ? Int(words[1]) : nil
        switch command {
        case "level":
            guard words.count == 2, ["NONE", "BACKGROUND", "LIMITED", "FULL"].contains(words[1]) else {
                return "error: level NONE|BACKGROUND|LIMITED|FULL"
            }
            let level = words[1]
            settings.forcedLevel = level
            registry.forEach { $0.setLevel(level) }
            return "ok"
        case "ignition-off":
            let gone = store.dropVolatile()
            registry.forEach { session in session.closeConnection() }
            return "ok dropped \(gone.count)"
        case "unregister":
            let silently = words.count > 1 && words[1] == "silently"
            registry.forEach { $0.unregisterApp(notify: !silently) }
            return "ok"
        case "generic-errors":
            guard let number else { return "error: generic-errors N" }
            settings.set(genericErrors: number)
            return "ok"
        case "corrupt":
            guard let number else { return "error: corrupt N" }
            settings.set(corruptPuts: number)
            return "ok"
        case "cut-after":
            guard let number else { return "error: cut-after BYTES [CONNECTIONS]" }
            settings.set(cutAfterBytes: number, cutConnections: words.count > 2 ? Int(words[2]) ?? 1 : 1)
            return "ok"
        case "delay":
            guard let number else { return "error: delay MS" }
            settings.delayMilliseconds = number
            return "ok"
        case "stats":
            return "ok \(settings.stats) files=\(store.names().count) space=\(store.spaceAvailable())"
        default:
            return "error: unknown command \(command)"
        }
    }
}
