import Foundation

/// Runs a program to completion (or a time limit) and captures what it printed.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// The process's peak resident memory (`VmHWM` of `/proc/PID/status`, read every 10 ms while it ran; the
    /// high-water mark only grows, so the last reading is at most 10 ms of growth short of the peak), in KiB.
    /// Nil where `/proc` is absent.
    public var peakMemoryKiB: Int?
    /// Wall time from start to exit, in seconds.
    public var seconds: Double = 0
    /// Everything printed, both streams.
    public var output: String { stdout + stderr }
}

/// Reads a running process's peak resident memory from `/proc`.
public enum PeakMemory {
    /// `VmHWM` of `pid` in KiB, or nil when it cannot be read (the process ended, no `/proc`).
    public static func kibibytes(of pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        }
        return nil
    }
}

public enum ProcessRunner {
    /// Runs `executable` with `arguments`. The environment is the test's own plus `environment`.
    /// The process is killed (SIGKILL) after `timeout` seconds and `status` is then -9.
    /// Waits with `Task.sleep`, so a test running a program does not hold one of the few threads of the
    /// cooperative pool that every other test (and its client timeouts) shares.
    public static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:], currentDirectory: URL? = nil,
        timeout: TimeInterval = 120
    ) async throws -> ProcessResult {
        // Swift Testing starts every test at once: without a bound, a few hundred short programs would start
        // together on two cores, and every test's time limit would measure the queue for the CPU.
        await ProcessSlots.shared.enter()
        defer { ProcessSlots.shared.leave() }
        let started = Date()
        let running = try Running(executable, arguments, environment: environment, currentDirectory: currentDirectory)
        let deadline = Date().addingTimeInterval(timeout)
        var killed = false
        var peak: Int? = nil
        while running.process.isRunning {
            if let reading = PeakMemory.kibibytes(of: running.process.processIdentifier) { peak = max(peak ?? 0, reading) }
            if Date() > deadline {
                kill(running.process.processIdentifier, SIGKILL)
                killed = true
                break
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        var result = running.finish(killed: killed)
        result.peakMemoryKiB = peak
        // From the start to the child's exit as its waiting thread saw it, not to when this task noticed.
        result.seconds = (running.process.endedAt ?? Date()).timeIntervalSince(started)
        return result
    }

    /// Waits (at most `timeout` seconds, without blocking a thread) for a started process to exit, then reaps it.
    /// Returns false, leaving it running, when it did not exit in time.
    @discardableResult
    public static func waitForExit(_ process: ChildProcess, timeout: TimeInterval = 120) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        process.waitUntilExit()
        return true
    }

    /// Watches a running process from a thread of its own (not the test pool, which other tests may keep busy
    /// for seconds): checks `condition` every 2 ms and, the moment it holds while the process still runs,
    /// performs `action` (a signal) on that same thread. True when it did; false when the process ended first
    /// or `timeout` passed.
    public static func when(
        _ process: ChildProcess, timeout: TimeInterval = 120, _ condition: @escaping @Sendable () -> Bool,
        then action: @escaping @Sendable () -> Void
    ) async -> Bool {
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let thread = Thread {
                let deadline = Date().addingTimeInterval(timeout)
                while process.isRunning, Date() < deadline {
                    if condition() {
                        action()
                        continuation.resume(returning: true)
                        return
                    }
                    usleep(2_000)
                }
                continuation.resume(returning: false)
            }
            thread.start()
        }
    }

    /// ``run(_:_:environment:currentDirectory:timeout:)`` for synchronous contexts (a `defer`, a one-time
    /// availability check); blocks the calling thread, so keep it for short programs.
    public static func runBlocking(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = 60
    ) throws -> ProcessResult {
        let running = try Running(executable, arguments, environment: environment, currentDirectory: nil)
        let deadline = Date().addingTimeInterval(timeout)
        var killed = false
        while running.process.isRunning {
            if Date() > deadline {
                kill(running.process.processIdentifier, SIGKILL)
                killed = true
                break
            }
            usleep(10_000)
        }
        return running.finish(killed: killed)
    }

    /// A started process whose output goes to two temporary files.
    private struct Running {
        let process = ChildProcess()
        let outFile = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("sg-out-\(UUID().uuidString)")
        let errFile = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("sg-err-\(UUID().uuidString)")
        let outHandle: FileHandle
        let errHandle: FileHandle

        init(_ executable: URL, _ arguments: [String], environment: [String: String], currentDirectory: URL?) throws {
            process.executableURL = executable
            process.arguments = arguments
            var env = ProcessInfo.processInfo.environment
            for (key, value) in environment { env[key] = value }
            process.environment = env
            if let currentDirectory { process.currentDirectoryURL = currentDirectory }
            _ = FileManager.default.createFile(atPath: outFile.path, contents: nil)
            _ = FileManager.default.createFile(atPath: errFile.path, contents: nil)
            outHandle = try FileHandle(forWritingTo: outFile)
            errHandle = try FileHandle(forWritingTo: errFile)
            process.standardOutput = outHandle
            process.standardError = errHandle
            process.standardInput = FileHandle.nullDevice
            do {
                try process.run()
            } catch {
                removeFiles()
                throw error
            }
        }

        /// Reaps the (exited or killed) process and returns what it printed.
        func finish(killed: Bool) -> ProcessResult {
            process.waitUntilExit()
            try? outHandle.close()
            try? errHandle.close()
            let stdout = (try? String(contentsOf: outFile, encoding: .utf8)) ?? ""
            let stderr = (try? String(contentsOf: errFile, encoding: .utf8)) ?? ""
            removeFiles()
            return ProcessResult(status: killed ? -9 : process.terminationStatus, stdout: stdout, stderr: stderr)
        }

        private func removeFiles() {
            try? FileManager.default.removeItem(at: outFile)
            try? FileManager.default.removeItem(at: errFile)
        }
    }

    /// Stops a server a test started: SIGTERM, SIGKILL if it is still there after `grace` seconds, then reaps it.
    public static func stop(_ process: ChildProcess, grace: TimeInterval = 5) {
        if process.isRunning {
            process.terminate()
            let deadline = Date().addingTimeInterval(grace)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
    }

    /// Starts `count` copies of a program at once (instances of a fleet), each with its output in `log-N.log`
    /// under `directory` (also their working folder), waits for all of them, and returns each one's exit status
    /// and output, in the order they were started (nil status: still running after `timeout` seconds).
    public static func runTogether(
        _ executable: URL, _ arguments: [String], count: Int, environment: [String: String] = [:], directory: URL,
        timeout: TimeInterval = 300
    ) async throws -> [(status: Int32?, log: String)] {
        var started: [(ChildProcess, URL)] = []
        for index in 0..<count {
            let log = directory.appendingPathComponent("log-\(index).log")
            started.append((try start(executable, arguments, environment: environment, currentDirectory: directory, logFile: log), log))
        }
        var results: [(status: Int32?, log: String)] = []
        for (process, log) in started {
            let ended = await waitForExit(process, timeout: timeout)
            results.append((ended ? process.terminationStatus : nil, (try? String(contentsOf: log, encoding: .utf8)) ?? ""))
        }
        return results
    }

    /// Starts a long-running program (a server, a sync a test will signal) with its output appended to `logFile`
    /// (discarded without one).
    public static func start(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:], currentDirectory: URL? = nil,
        logFile: URL? = nil
    ) throws -> ChildProcess {
        let process = ChildProcess()
        process.executableURL = executable
        process.arguments = arguments
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        process.standardInput = FileHandle.nullDevice
        if let logFile {
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
            let handle = try FileHandle(forWritingTo: logFile)
            process.standardOutput = handle
            process.standardError = handle
        } else {
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
        return process
    }

    /// Whether python3 can import these modules, found without importing them (importing moto takes seconds on a
    /// busy machine, and these checks run while Swift Testing decides which tests to run, holding its threads).
    public static func pythonHas(_ modules: [String]) -> Bool {
        guard let python = which("python3") else { return false }
        let script = "import importlib.util, sys; sys.exit(0 if all(importlib.util.find_spec(m) for m in sys.argv[1:]) else 1)"
        return (try? runBlocking(python, ["-c", script] + modules, timeout: 30))?.status == 0
    }

    /// Finds a program on PATH.
    public static func which(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(dir)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }
}

/// How many programs ``ProcessRunner/run(_:_:environment:currentDirectory:timeout:)`` runs at once across the test
/// process: twice the cores (at least 4), or `SYNCGATE_TEST_PROCESSES`. Long-running servers started with
/// ``ProcessRunner/start(_:_:environment:currentDirectory:logFile:)`` do not count.
public final class ProcessSlots: @unchecked Sendable {
    public static let shared = ProcessSlots(
        capacity: ProcessInfo.processInfo.environment["SYNCGATE_TEST_PROCESSES"].flatMap { Int($0) }
            ?? max(4, 2 * ProcessInfo.processInfo.activeProcessorCount))

    private let lock = NSLock()
    private var free: Int
    private var waiters: [CheckedContinuation<Void, Never>] = []

    init(capacity: Int) { free = max(1, capacity) }

    public func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now: Bool = lock.withLock {
                if free > 0 {
                    free -= 1
                    return true
                }
                waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    public func leave() {
        let next: CheckedContinuation<Void, Never>? = lock.withLock {
            if waiters.isEmpty {
                free += 1
                return nil
            }
            return waiters.removeFirst()
        }
        next?.resume()
    }
}
