import Foundation
import SyncgateTestSupport
import Testing

/// systemd fit: the shipped units pass `systemd-analyze verify`, and `syncgate run` speaks the notify protocol
/// (READY=1 once it delivers, WATCHDOG=1 at half of WATCHDOG_USEC, STOPPING=1 on SIGTERM) over `NOTIFY_SOCKET`.
@Suite("systemd units and notify protocol")
struct SystemdTests {
    static let analyze = "/usr/bin/systemd-analyze"

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: SystemdTests.analyze), "needs systemd-analyze (Debian's systemd package)"))
    func theShippedUnitsVerify() async throws {
        let dir = try TemporaryDirectory("sg-units")
        defer { dir.remove() }
        let units = ["syncgate.service", "syncgate-sync.service", "syncgate-sync.timer"]
        for unit in units {
            let text = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("examples/systemd/\(unit)"), encoding: .utf8)
            // verify checks that ExecStart's program exists: point it at the built binary.
            try dir.write(unit, text.replacingOccurrences(of: "/usr/local/bin/syncgate", with: SyncgateCLI.binary.path))
        }
        let result = try await ProcessRunner.run(URL(fileURLWithPath: Self.analyze), ["verify"] + units.map { dir.file($0).path },
                                                 currentDirectory: dir.url)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.isEmpty, "\(result.output)")
        let service = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("examples/systemd/syncgate.service"), encoding: .utf8)
        for line in ["Type=notify", "ProtectSystem=strict", "ReadWritePaths=", "WatchdogSec=", "ExecReload=/bin/kill -HUP $MAINPID"] {
            #expect(service.contains(line), "\(line)")
        }
        // Hardened (issue 29): both services filter system calls, see only their own processes, and validate the
        // config before they start.
        for unit in ["syncgate.service", "syncgate-sync.service"] {
            let text = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("examples/systemd/\(unit)"), encoding: .utf8)
            for line in ["SystemCallFilter=@system-service", "ProtectProc=invisible", "ProcSubset=pid", "User=syncgate",
                         "ExecStartPre=/usr/local/bin/syncgate validate "] {
                #expect(text.contains("\n" + line), "\(unit): \(line)")
            }
        }
    }

    /// The sysusers.d entry makes the user the units run as: systemd-sysusers applied to an empty root.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-sysusers"), "needs systemd-sysusers (Debian's systemd package)"))
    func theSysusersEntryMakesTheServiceUser() async throws {
        let dir = try TemporaryDirectory("sg-sysusers")
        defer { dir.remove() }
        // (With --root, sysusers reads its entries from the root's own sysusers.d.)
        let conf = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("examples/systemd/syncgate.sysusers.conf"), encoding: .utf8)
        try dir.write("root/etc/sysusers.d/syncgate.conf", conf)
        let result = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/systemd-sysusers"), ["--root=\(dir.path)/root"])
        #expect(result.status == 0, "\(result.output)")
        let passwd = try String(contentsOf: dir.file("root/etc/passwd"), encoding: .utf8)
        let entry = passwd.split(separator: "\n").first { $0.hasPrefix("syncgate:") }.map(String.init)
        #expect(entry?.hasSuffix(":/var/lib/syncgate:/usr/sbin/nologin") == true, "\(passwd)")
        let group = try String(contentsOf: dir.file("root/etc/group"), encoding: .utf8)
        #expect(group.split(separator: "\n").contains { $0.hasPrefix("syncgate:") }, "\(group)")
    }

    @Test func runSpeaksTheNotifyProtocol() async throws {
        let dir = try TemporaryDirectory("sg-notify")
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: archive, type: local, path: synced}]
            """)
        try dir.write("outbox/a.txt", "a")
        let socket = try NotifySocket(in: dir)
        defer { socket.stop() }
        let gateway = try ProcessRunner.start(
            SyncgateCLI.binary, ["run"], environment: ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "400000"],
            currentDirectory: dir.url, logFile: dir.file("gateway.log"))
        var deadline = Date().addingTimeInterval(30)
        while Date() < deadline, !(socket.got("READY=1") && socket.messages.filter { $0.contains("WATCHDOG=1") }.count >= 2) {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(socket.got("READY=1"), "\(socket.messages)")
        #expect(socket.messages.filter { $0.contains("WATCHDOG=1") }.count >= 2, "\(socket.messages)")
        kill(gateway.processIdentifier, SIGTERM)
        #expect(await ProcessRunner.waitForExit(gateway, timeout: 20))
        #expect(gateway.terminationStatus == 0)
        deadline = Date().addingTimeInterval(5)
        while Date() < deadline, !socket.got("STOPPING=1") { try await Task.sleep(for: .milliseconds(50)) }
        #expect(socket.got("STOPPING=1"), "\(socket.messages)")
    }
}
