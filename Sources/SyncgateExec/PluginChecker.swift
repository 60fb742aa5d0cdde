import Foundation
import Logging
import SyncgateCore
import SyncgateJSON

/// `syncgate plugin check`: a conformance run of any plugin program, through the same host syncgate uses. Each
/// step is a line of the report; a violation fails it. A step during which the plugin broke the protocol (and was
/// killed for it) or sent progress going back fails with what it did; the next step starts it again.
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
    /// The rate the cancelled put is paced at (for a plugin that paces): slow enough that a plugin that goes on
    /// after the cancel is still at it well past the cancel grace (64 MiB at 4 MiB/s: 16 s).
    public var cancelRate: Double = 4 * 1024 * 1024

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

    /// Runs every step, reporting each as it ends; true when none failed.
    public func run(_ report: @escaping @Sendable (Step) -> Void) async -> Bool {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("syncgate-plugin-check-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = ExecDestination(spec: spec, logger: logger)
        let run = CheckRun(destination: destination, folder: folder, report: report)

        // 1. Handshake.
        do {
            run.watch(try await destination.host.session())
        } catch {
            run.record("handshake (hello, configure)", false, DeliveryLayer.describe(error))
            await destination.finish()
            return false
        }
        let capabilities = destination.capabilities
        run.record("handshake (hello, configure)", true, "protocol 1, capabilities [\(capabilities.names.joined(separator: ", "))]")

        let items = await putAwkwardNames(run)
        await batch(run, capabilities: capabilities)
        await listAndDelete(run, items: items, capabilities: capabilities)
        await batchDelete(run, capabilities: capabilities)
        await unreadable(run)
        let large = await largeFile(run, capabilities: capabilities)
        await exists(run, capabilities: capabilities)
        await probe(run, capabilities: capabilities)
        await cancel(run, large: large, capabilities: capabilities)
        await faults(run, capabilities: capabilities)
        await unknownOp(run)
        await exitsOnEOF(run)
        await destination.finish()
        let failed = run.failed
        report(Step(name: "\(run.count) checks", passed: failed.isEmpty,
                    detail: failed.isEmpty ? "all passed" : "\(failed.count) failed: \(failed.joined(separator: "; "))"))
        return failed.isEmpty
    }

    func item(_ url: URL, name: String, size: Int64, sha256: String = "") -> UploadItem {
        UploadItem(source: "check", relativePath: name, absolutePath: url.path, remoteName: name, size: size,
                   modificationTime: Date(), sha256: sha256, isArtwork: false)
    }

    /// Writes a small file of `size` patterned bytes.
    func small(_ run: CheckRun, _ name: String, size: Int, seed: Int) -> URL {
        let url = run.folder.appendingPathComponent(name)
        try? Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) }).write(to: url)
        return url
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
            ], what: "put with a fault", deadline: spec.answerTimeout, paces: true)
        } catch let body as PluginErrorBody {
            throw body.destinationError
        }
    }
}
