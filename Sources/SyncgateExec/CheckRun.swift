import Foundation
import SyncgateCore
import Synchronization

/// One `plugin check` under way: the report's lines, the steps that failed, and the plugin session each step
/// watches, so that a step during which the plugin was killed for breaking the protocol, or sent progress going
/// back, fails and says what it did.
final class CheckRun: Sendable {
    let destination: ExecDestination
    let folder: URL
    private let report: @Sendable (PluginChecker.Step) -> Void

    private struct State {
        var failed: [String] = []
        var count = 0
        var session: PluginSession?
    }

    private let state = Mutex(State())

    init(destination: ExecDestination, folder: URL, report: @escaping @Sendable (PluginChecker.Step) -> Void) {
        self.destination = destination
        self.folder = folder
        self.report = report
    }

    /// Watches `session` (the running plugin) from now on.
    func watch(_ session: PluginSession) {
        state.withLock { $0.session = session }
    }

    /// Reports a step, failing it as well when the plugin broke the protocol while it ran: killed for it (the reason
    /// said), or progress going back. The plugin is started again for the next step. Its detail is one line, control
    /// characters escaped.
    func record(_ name: String, _ passed: Bool, _ detail: String? = nil) {
        var problems: [String] = []
        let session = state.withLock { $0.session }
        if let session, let reason = session.unexpectedEnd {
            problems.append(reason)
            state.withLock { $0.session = nil }
        }
        problems += CheckRun.grouped(destination.notes.take())
        let ok = passed && problems.isEmpty
        var parts: [String] = []
        for part in [detail].compactMap({ $0 }) + problems where !parts.contains(where: { $0.contains(part) }) { parts.append(part) }
        // One line each, whatever the names or the plugin's messages hold (a name with a newline is among the puts).
        let text = TerminalText.escape(parts.joined(separator: "; "))
        state.withLock { state in
            state.count += 1
            if !ok { state.failed.append(name) }
        }
        report(PluginChecker.Step(name: name, passed: ok, detail: text.isEmpty ? nil : text))
    }

    /// Notes alike (the same lapse on many puts) said once, with how many more there were.
    static func grouped(_ notes: [String]) -> [String] {
        guard let first = notes.first else { return [] }
        return notes.count == 1 ? [first] : ["\(first) (and \(notes.count - 1) more like it)"]
    }

    /// `failures` (a name and what went wrong), those that went wrong alike together: "a, b and 3 more: reason".
    /// What tells one request from another (`(during put 'a')`) is left out of the comparison.
    static func grouped(_ failures: [(name: String, message: String)]) -> [String] {
        var order: [String] = []
        var names: [String: [String]] = [:]
        for (name, message) in failures {
            var common = message
            if let during = common.range(of: " (during ", options: .backwards), common.hasSuffix(")") { common = String(common[..<during.lowerBound]) }
            if names[common] == nil { order.append(common) }
            names[common, default: []].append(name)
        }
        return order.map { common in
            let all = names[common] ?? []
            let shown = all.prefix(2).joined(separator: ", ") + (all.count > 2 ? " and \(all.count - 2) more" : "")
            return "\(shown): \(common)"
        }
    }

    /// The running plugin (started again at once when the last was killed: no backoff between the steps of a
    /// check), watched from now on; nil when it cannot start.
    func session() async -> PluginSession? {
        destination.host.markHealthy()
        guard let session = try? await destination.host.session() else { return nil }
        watch(session)
        return session
    }

    var failed: [String] { state.withLock { $0.failed } }
    var count: Int { state.withLock { $0.count } }
}
