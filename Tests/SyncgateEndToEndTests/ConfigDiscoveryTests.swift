import Foundation
import SyncgateTestSupport
import Testing

/// Which config file the built binary reads (issue 29): `--config`, else `SYNCGATE_CONFIG`, else `./plugins.yaml`,
/// else `$XDG_CONFIG_HOME/syncgate/plugins.yaml` (`~/.config`), else `/etc/syncgate/plugins.yaml`; and where the
/// state goes for a config under `/etc`. Each step runs `syncgate validate` in a child process with its own
/// environment; `validate` names the file it read and why.
@Suite("Config discovery (real binary)")
struct ConfigDiscoveryTests {
    let dir: TemporaryDirectory

    init() throws {
        dir = try TemporaryDirectory("sg-config-discovery")
    }

    /// A config whose one destination is named `name`, so that `validate` shows which file it read.
    func config(_ name: String) -> String {
        """
        version: 1
        sources: [{name: outbox, path: \(dir.path)/outbox}]
        destinations:
          - name: \(name)
            type: local
            path: \(dir.path)/synced-\(name)
        """
    }

    /// `syncgate validate` in `folder` (below the temporary folder) with `environment`: HOME and XDG_CONFIG_HOME
    /// always set, so that the test's own never count.
    func validate(in folder: String, _ environment: [String: String], _ arguments: [String] = []) async throws -> ProcessResult {
        var env = ["HOME": dir.path + "/home", "XDG_CONFIG_HOME": "", "SYNCGATE_CONFIG": ""]
        env.merge(environment) { $1 }
        try FileManager.default.createDirectory(at: dir.file(folder), withIntermediateDirectories: true)
        return try await ProcessRunner.run(SyncgateCLI.binary, arguments + ["validate"], environment: env, currentDirectory: dir.file(folder))
    }

    @Test func eachStepWinsOverTheLaterOnes() async throws {
        defer { dir.remove() }
        try dir.write("outbox/a.txt", "a")
        try dir.write("work/plugins.yaml", config("cwd"))
        try dir.write("named/by-env.yaml", config("env"))
        try dir.write("named/by-option.yaml", config("option"))
        try dir.write("xdg/syncgate/plugins.yaml", config("xdg"))
        try dir.write("home/.config/syncgate/plugins.yaml", config("home"))
        let xdg = ["XDG_CONFIG_HOME": dir.path + "/xdg"]
        let named = ["SYNCGATE_CONFIG": dir.path + "/named/by-env.yaml"]

        // 1. --config, over SYNCGATE_CONFIG and ./plugins.yaml.
        let option = try await validate(in: "work", named.merging(xdg) { $1 }, ["--config", "../named/by-option.yaml"])
        #expect(option.status == 0, "\(option.stderr)")
        #expect(option.stdout.hasPrefix("../named/by-option.yaml: OK (from --config)\n"), "\(option.stdout)")
        #expect(option.stdout.contains("  option (local)"), "\(option.stdout)")

        // 2. SYNCGATE_CONFIG, over ./plugins.yaml.
        let env = try await validate(in: "work", named.merging(xdg) { $1 })
        #expect(env.status == 0, "\(env.stderr)")
        #expect(env.stdout.hasPrefix("\(dir.path)/named/by-env.yaml: OK (from SYNCGATE_CONFIG)\n"), "\(env.stdout)")
        #expect(env.stdout.contains("  env (local)"), "\(env.stdout)")
        // Its state sits beside it, as with --config.
        #expect(env.stdout.contains("state: \(dir.path)/named/.syncgate/state.sqlite\n"), "\(env.stdout)")

        // 3. ./plugins.yaml, over the user's folder.
        let cwd = try await validate(in: "work", xdg)
        #expect(cwd.status == 0, "\(cwd.stderr)")
        #expect(cwd.stdout.hasPrefix("plugins.yaml: OK (found in the current folder)\n"), "\(cwd.stdout)")
        #expect(cwd.stdout.contains("  cwd (local)"), "\(cwd.stdout)")

        // 4. $XDG_CONFIG_HOME/syncgate/plugins.yaml from a folder without one.
        let user = try await validate(in: "elsewhere", xdg)
        #expect(user.status == 0, "\(user.stderr)")
        #expect(user.stdout.hasPrefix("\(dir.path)/xdg/syncgate/plugins.yaml: OK (found in $XDG_CONFIG_HOME/syncgate)\n"), "\(user.stdout)")
        #expect(user.stdout.contains("state: \(dir.path)/xdg/syncgate/.syncgate/state.sqlite\n"), "\(user.stdout)")

        // 4'. Without XDG_CONFIG_HOME (empty, or relative: both ignored), ~/.config.
        for value in ["", "relative/xdg"] {
            let home = try await validate(in: "elsewhere", ["XDG_CONFIG_HOME": value])
            #expect(home.status == 0, "\(value): \(home.stderr)")
            #expect(home.stdout.hasPrefix("\(dir.path)/home/.config/syncgate/plugins.yaml: OK"), "\(value): \(home.stdout)")
            #expect(home.stdout.contains("  home (local)"), "\(home.stdout)")
        }

        // Every other command reads the same file: a sync from that folder delivers through the user's config.
        var syncEnv = ["HOME": dir.path + "/home", "XDG_CONFIG_HOME": "", "SYNCGATE_CONFIG": ""]
        syncEnv["XDG_CONFIG_HOME"] = dir.path + "/xdg"
        let sync = try await ProcessRunner.run(SyncgateCLI.binary, ["sync"], environment: syncEnv, currentDirectory: dir.file("elsewhere"))
        #expect(sync.status == 0, "\(sync.stderr)")
        #expect(dir.exists("synced-xdg/a.txt"))
    }

    @Test func noneFoundListsThePlacesSearchedAndExits78() async throws {
        defer { dir.remove() }
        for command in ["validate", "status", "sync"] {
            var env = ["HOME": dir.path + "/home", "XDG_CONFIG_HOME": dir.path + "/xdg", "SYNCGATE_CONFIG": ""]
            env["SYNCGATE_LOG_LEVEL"] = "info"
            try FileManager.default.createDirectory(at: dir.file("empty"), withIntermediateDirectories: true)
            let result = try await ProcessRunner.run(SyncgateCLI.binary, [command], environment: env, currentDirectory: dir.file("empty"))
            #expect(result.status == 78, "\(command): \(result.stderr)")
            // (On a machine with /etc/syncgate/plugins.yaml that one would be read: then the places are not listed.)
            if !FileManager.default.fileExists(atPath: "/etc/syncgate/plugins.yaml") {
                #expect(result.stderr == "syncgate: no config file: none of ./plugins.yaml, \(dir.path)/xdg/syncgate/plugins.yaml, /etc/syncgate/plugins.yaml exists (pass --config PATH or set SYNCGATE_CONFIG)\n", "\(command): \(result.stderr)")
            }
        }
        // A named file that is missing is named, not searched past.
        let missing = try await validate(in: "empty", ["SYNCGATE_CONFIG": dir.path + "/nothere.yaml"])
        #expect(missing.status == 78)
        #expect(missing.stderr == "syncgate: \(dir.path)/nothere.yaml: no such file (pass --config PATH)\n", "\(missing.stderr)")
    }

    /// The last step, and the state of a config under `/etc`, in a mount namespace of its own whose `/etc` is an
    /// overlay: the machine's `/etc` is never written.
    @Test(.enabled(if: EtcOverlay.unavailableReason == nil, "needs root, unshare(1) and overlayfs for a private /etc"))
    func etcIsTheLastPlaceAndItsStateGoesToVarLib() async throws {
        defer { dir.remove() }
        try dir.write("outbox/a.txt", "a")
        try dir.write("etc-config.yaml", config("system"))
        try FileManager.default.createDirectory(at: dir.file("empty"), withIntermediateDirectories: true)
        func validateWithEtc(_ environment: [String: String]) async throws -> ProcessResult {
            var env = ["HOME": dir.path + "/home", "XDG_CONFIG_HOME": dir.path + "/xdg", "SYNCGATE_CONFIG": ""]
            env.merge(environment) { $1 }
            let overlay = try TemporaryDirectory("sg-etc-overlay")
            defer { overlay.remove() }
            return try await ProcessRunner.run(
                URL(fileURLWithPath: "/bin/sh"),
                ["-c", EtcOverlay.script(overlay: overlay.path, config: dir.path + "/etc-config.yaml"), SyncgateCLI.binary.path, "validate"],
                environment: env, currentDirectory: dir.file("empty"))
        }
        let plain = try await validateWithEtc([:])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdout.hasPrefix("/etc/syncgate/plugins.yaml: OK (found in /etc/syncgate)\n"), "\(plain.stdout)")
        #expect(plain.stdout.contains("  system (local)"), "\(plain.stdout)")
        #expect(plain.stdout.contains("state: /var/lib/syncgate/state.sqlite\n"), "\(plain.stdout)")
        // Under systemd (StateDirectory=), its folder; the first one when it names several.
        let systemd = try await validateWithEtc(["STATE_DIRECTORY": "/var/lib/sg-one:/var/lib/sg-two"])
        #expect(systemd.status == 0, "\(systemd.stderr)")
        #expect(systemd.stdout.contains("state: /var/lib/sg-one/state.sqlite\n"), "\(systemd.stdout)")
        // A config elsewhere keeps its state beside it, STATE_DIRECTORY or not.
        var named = ["HOME": dir.path + "/home", "XDG_CONFIG_HOME": "", "STATE_DIRECTORY": "/var/lib/sg-one"]
        named["SYNCGATE_CONFIG"] = dir.path + "/etc-config.yaml"
        let beside = try await ProcessRunner.run(SyncgateCLI.binary, ["validate"], environment: named, currentDirectory: dir.file("empty"))
        #expect(beside.stdout.contains("state: \(dir.path)/.syncgate/state.sqlite\n"), "\(beside.stdout)")
    }
}

/// A private `/etc` for one command: `unshare --mount`, an overlay on `/etc` whose upper layer is a temporary
/// folder, the config copied to `/etc/syncgate/plugins.yaml`, then the command (`$0 "$@"`).
enum EtcOverlay {
    static func script(overlay: String, config: String) -> String {
        """
        exec /usr/bin/unshare --mount --propagation private /bin/sh -c '
          mkdir -p "\(overlay)/upper" "\(overlay)/work" &&
          mount -t overlay overlay -o lowerdir=/etc,upperdir="\(overlay)/upper",workdir="\(overlay)/work" /etc &&
          mkdir -p /etc/syncgate && cp "\(config)" /etc/syncgate/plugins.yaml && exec "$0" "$@"' "$0" "$@"
        """
    }

    /// Why it cannot be done here, or nil.
    static let unavailableReason: String? = {
        guard getuid() == 0 else { return "not root" }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { return "no /usr/bin/unshare" }
        guard let overlay = try? TemporaryDirectory("sg-etc-probe") else { return "no temporary folder" }
        defer { overlay.remove() }
        guard let config = try? overlay.write("probe.yaml", "probe") else { return "no temporary folder" }
        let result = try? ProcessRunner.runBlocking(
            URL(fileURLWithPath: "/bin/sh"), ["-c", script(overlay: overlay.path + "/o", config: config.path), "/bin/cat", "/etc/syncgate/plugins.yaml"])
        return result?.stdout == "probe" ? nil : "an overlay on /etc cannot be mounted: \(result?.stderr ?? "unshare did not run")"
    }()
}
