import Foundation
import Logging
import SyncgateCore
import Synchronization
import SyncgateJSON

/// `syncgate plugin check`: a conformance run of any plugin program, through the same host syncgate uses. Each
/// step is a line of the report; a violation fails it.
public struct PluginChecker: Sendable {
    public struct Step: Sendable {
        public var name: String
        public var passed: Bool
        /// nil: passed with nothing to add; "skipped: ..." for a step the plugin's capabilities leave out.
        public var detail: String?
        public var line: String { "\(passed ? "ok  " : "FAIL") \(name)\(detail.map { ": \($0)" } ?? "")" }
    }

    public var spec: PluginSpec
    public var logger: Logger
    /// Size of the large file (64 MiB by default; sparse, so it costs no disk).
    public var largeSize: Int64 = 64 << 20

    public init(spec: PluginSpec, logger: Logger) {
        self.spec = spec
        self.logger = logger
    }

    /// Names that trip up naive plugins: spaces, quotes, a backslash, a newline, non-ASCII in both normal forms,
    /// deep folders, a leading dash, shell and JSON metacharacters.
    public static let awkwardNames = [
        "plain.txt", "with space.txt", "quote'and\"double.txt", "back\\slash.txt", "new\nline.txt", "caf\u{E9}-nfc.txt",
        "cafe\u{301}-nfd.txt", "deep/er/folder/file.bin", "-leading-dash.txt", "semi;colon&amp$(x)`y`.txt",
        "\u{65E5}\u{672C}\u{8A9E}/\u{1F600}.dat",
    ]

    public func run(_ report: @Sendable (Step) -> Void) async -> Bool {
        let failures = Counter()
        func record(_ name: String, _ passed: Bool, _ detail: String? = nil) {
            if !passed { failures.add() }
            report(Step(name: name, passed: passed, detail: detail))
        }
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("syncgate-plugin-check-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        // 1. Handshake.
        let destination = ExecDestination(spec: spec, logger: logger)
        let host = destination.host
        let session: PluginSession
        do {
            session = try await host.session()
        } catch {
            record("handshake (hello, configure)", false, DeliveryLayer.describe(error))
            return false
        }
        let capabilities = destination.capabilities
        record("handshake (hello, configure)", true, "protocol 1, capabilities [\(capabilities.names.joined(separator: ", "))]")

        // 2. Awkward names, sent together.
        var items: [UploadItem] = []
        for (index, name) in PluginChecker.awkwardNames.enumerated() {
            let url = folder.appendingPathComponent("source-\(index)")
            let data = Data((0..<(1000 + index * 313)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) })
            try? data.write(to: url)
            items.append(item(url, name: name, size: Int64(data.count)))
        }
        let outcomes = await withTaskGroup(of: (String, String?).self) { group in
            for item in items {
                group.addTask {
                    let log = ProgressRecord()
                    do {
                        _ = try await destination.upload(item) { log.add($0) }
                        return (item.remoteName, log.problem(size: item.size))
                    } catch {
                        return (item.remoteName, "failed: \(DeliveryLayer.describe(error))")
                    }
                }
            }
            var all: [(String, String?)] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        let bad = outcomes.filter { $0.1 != nil }.map { "\(PluginChecker.show($0.0)): \($0.1!)" }
        record("put of \(items.count) awkward names, in flight together", bad.isEmpty, bad.isEmpty ? nil : bad.joined(separator: "; "))

        // 3. List and delete.
        if capabilities.list {
            do {
                let names = try await destination.list().names
                let missing = items.map(\.remoteName).filter { !names.contains($0) }
                record("list names what was put", missing.isEmpty, missing.isEmpty ? "\(names.count) names" : "missing: \(missing.map(PluginChecker.show))")
            } catch {
                record("list names what was put", false, DeliveryLayer.describe(error))
            }
        } else {
            record("list", true, "skipped: no list capability")
        }
        if capabilities.delete {
            var problems: [String] = []
            for item in items {
                do { try await destination.delete(remoteName: item.remoteName) } catch { problems.append("\(PluginChecker.show(item.remoteName)): \(DeliveryLayer.describe(error))") }
            }
            if capabilities.list, problems.isEmpty, let names = try? await destination.list().names {
                let left = items.map(\.remoteName).filter { names.contains($0) }
                if !left.isEmpty { problems.append("still listed after delete: \(left.map(PluginChecker.show))") }
            }
            do {
                try await destination.delete(remoteName: "syncgate-check-never-put.txt")
                problems.append("deleting a name that is not there succeeded")
            } catch let error as DestinationError where error.scope == .file && error.failureClass == .permanent {
            } catch {
                problems.append("deleting a name that is not there: expected a permanent file error, got \(DeliveryLayer.describe(error))")
            }
            record("delete removes each name; a missing one is a permanent file error", problems.isEmpty, problems.isEmpty ? nil : problems.joined(separator: "; "))
        } else {
            record("delete", true, "skipped: no delete capability")
        }

        // 4. A file that cannot be read is the file's problem.
        do {
            _ = try await destination.upload(item(folder.appendingPathComponent("no-such-file"), name: "unreadable.txt", size: 10)) { _ in }
            record("put of a file that cannot be read fails (file scope)", false, "it succeeded")
        } catch let error as DestinationError {
            record("put of a file that cannot be read fails (file scope)", error.scope == .file, "\(error.classification): \(error.message)")
        } catch {
            record("put of a file that cannot be read fails (file scope)", false, DeliveryLayer.describe(error))
        }

        // 5. A large file.
        let large = folder.appendingPathComponent("large.bin")
        _ = FileManager.default.createFile(atPath: large.path, contents: nil)
        if let handle = try? FileHandle(forWritingTo: large) {
            try? handle.truncate(atOffset: UInt64(largeSize))
            try? handle.close()
        }
        let largeItem = item(large, name: "large.bin", size: largeSize)
        do {
            let log = ProgressRecord()
            let started = ContinuousClock.now
            _ = try await destination.upload(largeItem) { log.add($0) }
            let problem = log.problem(size: largeSize)
            record("put of a \(largeSize >> 20) MiB file", problem == nil, problem ?? (ContinuousClock.now - started).syncgateText)
            if capabilities.delete { try? await destination.delete(remoteName: "large.bin") }
        } catch {
            record("put of a \(largeSize >> 20) MiB file", false, DeliveryLayer.describe(error))
        }

        // 6. Cancel: the plugin ends the request within the grace (else the host kills it as hung).
        do {
            let cancelled = item(large, name: "cancelled.bin", size: largeSize)
            let upload = Task { try await destination.upload(cancelled) { _ in } }
            try? await Task.sleep(for: .milliseconds(50))
            upload.cancel()
            _ = try? await upload.value
            try? await Task.sleep(for: spec.cancelGrace + .milliseconds(500))
            let alive = !session.isEnded
            record("cancel ends a put within \(spec.cancelGrace.syncgateText)", alive, alive ? nil : "the plugin was killed as hung")
            if capabilities.delete { try? await destination.delete(remoteName: "cancelled.bin") }
        }

        // 7. Errors of each class and scope.
        if capabilities.faults {
            var problems: [String] = []
            let small = folder.appendingPathComponent("source-0")
            for failureClass in [FailureClass.retryable(), .permanent, .deferred()] {
                for scope in [FailureScope.file, .destination] {
                    var faulty = item(small, name: "fault.txt", size: 1000)
                    faulty.source = "check"
                    do {
                        _ = try await destination.put(faulty, fault: ["class": .string(failureClass.name), "scope": .string(scope.rawValue)])
                        problems.append("\(failureClass.name)/\(scope.rawValue): it succeeded")
                    } catch let error as DestinationError {
                        if error.failureClass.name != failureClass.name || error.scope != scope {
                            problems.append("\(failureClass.name)/\(scope.rawValue): answered \(error.classification)")
                        }
                    } catch {
                        problems.append("\(failureClass.name)/\(scope.rawValue): \(DeliveryLayer.describe(error))")
                    }
                }
            }
            record("errors of each class and scope (retryable, permanent, deferred x file, destination)", problems.isEmpty, problems.isEmpty ? nil : problems.joined(separator: "; "))
        } else {
            record("errors of each class and scope", true, "skipped: no faults capability")
        }

        // 8. An op it does not know gets an error, not silence or a crash.
        if let current = try? await host.session() {
            do {
                _ = try await current.request("syncgate-check-unknown-op", [:], what: "an unknown op", idleLimit: spec.answerTimeout)
                record("an unknown op is answered with an error", false, "it answered ok")
            } catch is PluginErrorBody {
                record("an unknown op is answered with an error", true)
            } catch {
                record("an unknown op is answered with an error", false, "\(error)")
            }
        }

        // 9. It exits when its stdin closes.
        if let current = try? await host.session() {
            current.closeInput()
            let deadline = ContinuousClock.now + .seconds(3)
            while !current.isEnded && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
            record("exits within 3 s once its stdin closes", current.isEnded)
        }
        await destination.finish()
        return failures.value == 0
    }

    func item(_ url: URL, name: String, size: Int64) -> UploadItem {
        UploadItem(source: "check", relativePath: name, absolutePath: url.path, remoteName: name, size: size,
                   modificationTime: Date(), sha256: "", isArtwork: false)
    }

    static func show(_ name: String) -> String {
        JSONValue.string(name).text
    }
}

extension ExecDestination {
    /// A put carrying `fault` (for `plugin check`).
    func put(_ item: UploadItem, fault: JSONValue) async throws -> JSONValue {
        let session = try await host.session()
        do {
            return try await session.request("put", [
                "path": .string(item.absolutePath), "relative_path": .string(item.relativePath), "source": .string(item.source),
                "remote_name": .string(item.remoteName), "size": .int(item.size), "sha256": "", "mtime": 0, "attempt": 1,
                "outcome_unknown": false, "fault": fault,
            ], what: "put with a fault")
        } catch let body as PluginErrorBody {
            throw body.destinationError
        }
    }
}

final class Counter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

/// Byte progress of one put: never back, never past the size.
final class ProgressRecord: Sendable {
    private let values = Mutex<[Int64]>([])
    func add(_ value: Int64) { values.withLock { $0.append(value) } }
    func problem(size: Int64) -> String? {
        let all = values.withLock { $0 }
        if all.contains(where: { $0 < 0 || $0 > size }) { return "progress out of 0...\(size)" }
        if zip(all, all.dropFirst()).contains(where: { $1 < $0 }) { return "progress went back" }
        return nil
    }
}
