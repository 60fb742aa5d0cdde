import ArgumentParser
import Foundation
import SyncgateCore

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "The state of every destination and every file not synced (works while a sync runs).",
        discussion: """
            With PATH arguments: those files at every destination, synced ones included; a path the ledger does not \
            know exits 1. With --check: exit 1 when a file failed or a destination is blocked (for monitoring), 0 \
            otherwise.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @Option(name: .long, help: "Only this destination.", completion: DestinationCompletion.kind)
    var destination: String?

    @Flag(name: .long, help: "Only failed files.")
    var failed = false

    @Flag(name: .long, help: "With --json: every ledger row, one JSON object per line (NDJSON), streamed.")
    var all = false

    @Flag(name: .long, help: "Exit 1 when a file failed or a destination is blocked.")
    var check = false

    @Option(name: .long, help: ArgumentHelp("Also write a Prometheus textfile-collector file (atomically); - writes it to standard output instead of the report.", valueName: "file"),
            completion: .file(extensions: ["prom"]))
    var prometheus: String?

    @Argument(help: "Files to show at every destination: paths relative to their source, or paths of files inside a source folder.")
    var paths: [String] = []

    func validate() throws {
        if all && !json { throw ValidationError("--all streams JSON lines: use it with --json") }
        if all && !paths.isEmpty { throw ValidationError("--all lists every row: leave out the paths") }
        if prometheus == "-" && (json || all) { throw ValidationError("--prometheus - writes the metrics to standard output: leave out --json") }
    }

    func run() async throws {
        let logger = global.makeLogger()
        let config = try global.loadConfig(logger: logger, readingLedgerOnly: true)
        if let destination, config.destination(named: destination) == nil {
            throw ValidationError("no destination named '\(destination)' (known: \(config.destinations.map(\.name).joined(separator: ", ")))")
        }
        let (ledger, scratch) = try global.openLedgerToLook(config)
        defer { scratch.remove() }
        if all {
            try await ledger.forEachEntry(destination: destination) { entry in
                Console.out(ReportJSON.encode(StatusReport.fileObject(entry)))
                if Console.isOutputClosed { throw ExitCode(141) }
            }
            return
        }
        let relative = paths.map { relativePath($0, config: config) }
        let report = try await StatusReport.build(
            config: config, ledger: ledger, destination: destination, failedOnly: failed, paths: relative)
        if prometheus == "-" {
            Console.outRaw(PrometheusWriter.render(report, build: BuildInfo.description))
        } else if let prometheus {
            do {
                try PrometheusWriter.write(report, build: BuildInfo.description, to: prometheus)
            } catch {
                Console.error("cannot write \(prometheus): \(error.localizedDescription)")
                throw ExitCode(ExitStatus.failed)
            }
        }
        if json { Console.out(report.json) } else if prometheus != "-" { Console.outRaw(report.text) }
        // A path the ledger does not know (mistyped, or never seen by a sync) is an error, as `ls` of a missing
        // file is.
        let known = Set(report.files.map(\.file.path))
        let unknown = zip(paths, relative).filter { !known.contains($0.1) }
        for (written, path) in unknown {
            let said = written == path ? "" : " (\(path) in its source)"
            if let owner = config.sources.lazy.compactMap({ $0.own.owner(of: path) }).first {
                Console.error("\(written)\(said): syncgate's own (\(owner)): no source sends it (docs/configuration.md, \"What a source never walks\")", fields: ["path": path])
                continue
            }
            if let found = inSource(path, config: config) {
                Console.error("\(written)\(said): not in the ledger\(destination.map { " for \($0)" } ?? ""): \(found)", fields: ["path": path])
                continue
            }
            Console.error("\(written)\(said): not in the ledger\(destination.map { " for \($0)" } ?? ""): no sync has seen it; give the path relative to its source folder, or the path of a file inside one", fields: ["path": path])
        }
        if !unknown.isEmpty || (check && report.needsAttention) { throw ExitCode(ExitStatus.failed) }
    }

    /// Why a file that a source holds has no row yet: the source leaves it out, no route sends it (to the
    /// destination asked about), or no sync has seen it since it came. nil when no source holds a file there.
    private func inSource(_ path: String, config: GatewayConfig) -> String? {
        for source in config.sources {
            var st = stat()
            let found = source.followSymlinks ? stat(source.path + "/" + path, &st) : lstat(source.path + "/" + path, &st)
            guard found == 0, st.st_mode & S_IFMT == S_IFREG else { continue }
            guard source.selects(path) else { return "it is in source \(source.name), whose include and exclude leave it out" }
            let to = config.destinations(forSource: source.name, relativePath: path).filter { destination == nil || $0 == destination }
            guard !to.isEmpty else { return "it is in source \(source.name), but no route sends it\(destination.map { " to \($0)" } ?? " anywhere")" }
            return "it is in source \(source.name) and no sync has seen it yet: the next one sends it to \(to.joined(separator: ", "))"
        }
        return nil
    }

    /// A path as the ledger keeps it: relative to its source folder. A path to a file inside a source folder (from
    /// here, or absolute) is made relative to it; anything else is taken as already relative.
    private func relativePath(_ argument: String, config: GatewayConfig) -> String {
        let absolute = URL(fileURLWithPath: argument, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
            .standardizedFileURL.path
        for source in config.sources where absolute.hasPrefix(source.path + "/") {
            return String(absolute.dropFirst(source.path.count + 1))
        }
        return argument.hasPrefix("./") ? String(argument.dropFirst(2)) : argument
    }
}
