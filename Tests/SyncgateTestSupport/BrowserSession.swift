import Foundation

/// A real headless browser for page tests: Debian's chromium, driven through its DevTools protocol by
/// `Tests/BrowserDriver/browser_driver.py` (one JSON command a line). Pages are loaded, read with JavaScript,
/// clicked with real mouse events and photographed. Always ``close()`` it (use `defer`).
public final class BrowserSession: @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public static var script: URL { TestPaths.packageRoot.appendingPathComponent("Tests/BrowserDriver/browser_driver.py") }

    /// Why no browser can run here (no chromium, or python3 without websocket-client), or nil when one can.
    public static let unavailableReason: String? = {
        guard ProcessRunner.which("chromium") != nil || ProcessRunner.which("chromium-browser") != nil else {
            return "chromium is not installed (scripts/test-deps.d/http.sh)"
        }
        guard let python = ProcessRunner.which("python3") else { return "python3 is not installed" }
        guard let result = try? ProcessRunner.runBlocking(python, ["-c", "import websocket"], timeout: 30), result.status == 0 else {
            return "python3 has no `websocket` module (run scripts/test-deps.d/http.sh)"
        }
        return nil
    }()

    /// True when page tests should run (a browser is here, or required by `SYNCGATE_REQUIRE_SERVERS=1`, in which
    /// case starting it fails the test).
    public static var shouldRun: Bool { unavailableReason == nil || TestPaths.serversRequired }

    private let process: ChildProcess
    private let input: FileHandle
    private let lines: LineReader
    private let lock = NSLock()

    public init() async throws {
        if let reason = BrowserSession.unavailableReason { throw Failure(description: "no browser: \(reason)") }
        let process = ChildProcess()
        process.executableURL = ProcessRunner.which("python3")
        process.arguments = [BrowserSession.script.path]
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        input = stdin.fileHandleForWriting
        lines = LineReader(stdout.fileHandleForReading)
        let ready = try await lines.next(timeout: 90)
        guard let object = ready.flatMap(BrowserSession.decode), object["ok"] as? Bool == true else {
            process.terminate()
            throw Failure(description: "the browser did not start: \(ready ?? "(no answer)")")
        }
    }

    /// Loads `url` in a viewport of this size (`mobile`: a phone's, at twice the pixels) and waits for its load event.
    public func open(_ url: String, width: Int = 1280, height: Int = 900, mobile: Bool = false) async throws {
        _ = try await send(["cmd": "open", "url": url, "width": width, "height": height, "mobile": mobile])
    }

    /// The value of a JavaScript expression (a promise is awaited), as JSON gives it.
    public func evaluate(_ expression: String) async throws -> Any? {
        try await send(["cmd": "eval", "expr": expression])["value"]
    }

    /// Waits until a JavaScript expression is truthy and returns its value; throws, with the last value, when it
    /// is still not after `timeout` seconds (a bound against a hang, not a speed).
    @discardableResult
    public func waitFor(_ expression: String, timeout: Double = 60) async throws -> Any? {
        try await send(["cmd": "wait", "expr": expression, "timeout": timeout], answerWithin: timeout + 60)["value"]
    }

    /// A real mouse click at the centre of the first element `selector` finds (scrolled into view).
    public func click(_ selector: String) async throws {
        _ = try await send(["cmd": "click", "selector": selector])
    }

    /// A PNG of the page (`fullPage`: all of it, not only the viewport).
    public func screenshot(to url: URL, fullPage: Bool = true) async throws {
        _ = try await send(["cmd": "screenshot", "path": url.path, "full": fullPage])
    }

    /// Makes the page see `prefers-color-scheme` as `scheme` (`dark`, `light`; nil: the browser's own).
    public func colorScheme(_ scheme: String?) async throws {
        _ = try await send(["cmd": "colors", "scheme": scheme ?? ""])
    }

    /// What the page printed to its console, and its uncaught exceptions.
    public func log() async throws -> [String] {
        try await send(["cmd": "log"])["value"] as? [String] ?? []
    }

    public func close() {
        lock.withLock {
            if process.isRunning {
                try? input.write(contentsOf: Data("{\"cmd\": \"quit\"}\n".utf8))
                try? input.close()
            }
        }
        let deadline = Date().addingTimeInterval(15)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { process.terminate() }
    }

    private func send(_ command: [String: Any], answerWithin seconds: Double = 120) async throws -> [String: Any] {
        let data = try JSONSerialization.data(withJSONObject: command) + Data("\n".utf8)
        try lock.withLock { try input.write(contentsOf: data) }
        guard let line = try await lines.next(timeout: seconds) else {
            throw Failure(description: "the browser driver ended (\(command["cmd"] ?? ""))")
        }
        guard let answer = BrowserSession.decode(line) else { throw Failure(description: "not an answer: \(line)") }
        guard answer["ok"] as? Bool == true else {
            throw Failure(description: "\(command["cmd"] ?? ""): \(answer["error"] as? String ?? line)")
        }
        return answer
    }

    private static func decode(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
}

/// The lines a process prints, read on a thread of its own.
private final class LineReader: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    private var ended = false

    init(_ handle: FileHandle) {
        let thread = Thread { [self] in
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    lock.withLock { lines.append(line) }
                }
            }
            lock.withLock { ended = true }
        }
        thread.start()
    }

    /// The next line; nil when the process ended; throws after `timeout` seconds.
    func next(timeout: Double) async throws -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let (line, done) = lock.withLock { () -> (String?, Bool) in
                if !lines.isEmpty { return (lines.removeFirst(), false) }
                return (nil, ended)
            }
            if let line { return line }
            if done { return nil }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw BrowserSession.Failure(description: "no answer from the browser driver within \(Int(timeout)) s")
    }
}
