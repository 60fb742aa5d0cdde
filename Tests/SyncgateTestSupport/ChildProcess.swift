import Foundation
import Synchronization
import SyncgateCore
#if canImport(Glibc)
import Glibc
#endif

/// A program the tests start: the part of Foundation's `Process` the tests use, launched with `posix_spawn`.
///
/// Why not `Process`: on Linux, `Process.run()` (swift-corelibs-foundation up to Swift 6.3) finds the descriptors to
/// close in the child by reading `/proc/self/fd` and copies each entry's whole 256-byte `d_name`, past the end of the
/// record `readdir` returned. When a record sits at the end of glibc's directory buffer and the next page is not
/// mapped, the test process dies with SIGSEGV (swiftlang/swift-corelibs-foundation#5472). The test process holds
/// hundreds of descriptors (every test's servers and sockets), so the whole suite crashed about once in ten runs.
/// Here the child closes everything above 2 with `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34), which reads
/// nothing in the parent. syncgate's own helpers (plugins, `credential_process`) never used `Process`.
///
/// Like `Process`: the child gets a process group of its own (so a signal to the group reaches what it starts),
/// standard input from /dev/null unless set, and the test's environment unless `environment` is set. Unlike it, no
/// signal is blocked in the child whatever the starting thread blocks (``HelperSpawnAttributes``).
/// A thread of its own waits for the child (only its pid) and notes the moment it ended (``endedAt``), so that a test
/// measures the child's exit and not how late a busy test process noticed it.
public final class ChildProcess: Sendable {
    public typealias TerminationReason = Process.TerminationReason

    /// Where one of the child's standard streams goes.
    private enum Stream: Sendable {
        case inherited
        case nullDevice
        case handle(FileHandle)
        case pipe(Pipe)

        init(_ value: Any?) {
            switch value {
            case let pipe as Pipe: self = .pipe(pipe)
            case let handle as FileHandle: self = handle === FileHandle.nullDevice ? .nullDevice : .handle(handle)
            default: self = .nullDevice
            }
        }

        var value: Any? {
            switch self {
            case .inherited: return nil
            case .nullDevice: return FileHandle.nullDevice
            case .handle(let handle): return handle
            case .pipe(let pipe): return pipe
            }
        }
    }

    private struct State: Sendable {
        var executableURL: URL?
        var arguments: [String]?
        var environment: [String: String]?
        var currentDirectoryURL: URL?
        var input: Stream = .nullDevice
        var output: Stream = .inherited
        var error: Stream = .inherited
        var pid: pid_t = 0
        /// The raw wait status, once reaped.
        var exit: Int32?
        var endedAt: Date?
    }

    private let state = Mutex(State())

    public init() {}

    public var executableURL: URL? {
        get { state.withLock { $0.executableURL } }
        set { state.withLock { $0.executableURL = newValue } }
    }

    public var arguments: [String]? {
        get { state.withLock { $0.arguments } }
        set { state.withLock { $0.arguments = newValue } }
    }

    /// The child's whole environment; nil: the test process's own.
    public var environment: [String: String]? {
        get { state.withLock { $0.environment } }
        set { state.withLock { $0.environment = newValue } }
    }

    public var currentDirectoryURL: URL? {
        get { state.withLock { $0.currentDirectoryURL } }
        set { state.withLock { $0.currentDirectoryURL = newValue } }
    }

    /// A `FileHandle` or a `Pipe` (its reading end becomes the child's standard input); nil: /dev/null.
    public var standardInput: Any? {
        get { state.withLock { $0.input.value } }
        set { state.withLock { $0.input = Stream(newValue) } }
    }

    /// A `FileHandle` or a `Pipe` (its writing end becomes the child's standard output); nil: /dev/null.
    public var standardOutput: Any? {
        get { state.withLock { $0.output.value } }
        set { state.withLock { $0.output = Stream(newValue) } }
    }

    /// A `FileHandle` or a `Pipe` (its writing end becomes the child's standard error); nil: /dev/null.
    public var standardError: Any? {
        get { state.withLock { $0.error.value } }
        set { state.withLock { $0.error = Stream(newValue) } }
    }

    public var processIdentifier: Int32 { state.withLock { $0.pid } }

    /// Starts the program. Throws, starting nothing, when it cannot be started (no such file, not executable).
    public func run() throws {
        let setup = state.withLock { $0 }
        guard setup.pid == 0 else { throw ChildProcessError("already started") }
        guard let executable = setup.executableURL?.path else { throw ChildProcessError("no executable") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (stream, target, reading) in [(setup.input, STDIN_FILENO, true), (setup.output, STDOUT_FILENO, false),
                                          (setup.error, STDERR_FILENO, false)] {
            switch stream {
            case .inherited: break
            case .nullDevice: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", reading ? O_RDONLY : O_WRONLY, 0)
            case .handle(let handle): posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, target)
            case .pipe(let pipe):
                let end = reading ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                posix_spawn_file_actions_adddup2(&actions, end.fileDescriptor, target)
            }
        }
        guard let closefrom = SpawnFileActions.addclosefrom, let chdir = SpawnFileActions.addchdir else {
            throw ChildProcessError("the C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34)")
        }
        _ = closefrom(&actions, 3)
        if let directory = setup.currentDirectoryURL?.path {
            _ = directory.withCString { chdir(&actions, $0) }
        }
        let attributes = HelperSpawnAttributes()
        let argv = ([executable] + (setup.arguments ?? [])).map { strdup($0) } + [nil]
        let environment = setup.environment ?? ProcessInfo.processInfo.environment
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes.raw, argv, envp)
        guard status == 0 else {
            throw ChildProcessError("cannot start \(executable): \(String(cString: strerror(status)))")
        }
        state.withLock { $0.pid = pid }
        Thread { [self, pid] in
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            let now = Date()
            state.withLock {
                $0.exit = status
                $0.endedAt = now
            }
        }.start()
        // The parent's copies of the ends the child uses: closed, as Process does, so a reader sees end of file
        // once the child (and whatever it started) has closed its own.
        for (stream, reading) in [(setup.input, true), (setup.output, false), (setup.error, false)] {
            if case .pipe(let pipe) = stream {
                try? (reading ? pipe.fileHandleForReading : pipe.fileHandleForWriting).close()
            }
        }
    }

    /// Whether the child was started and has not ended.
    public var isRunning: Bool { state.withLock { $0.pid > 0 && $0.exit == nil } }

    /// When the child ended (seen by the thread that waits for it); nil while it runs.
    public var endedAt: Date? { state.withLock { $0.endedAt } }

    /// Blocks the calling thread until the child has ended.
    public func waitUntilExit() {
        while isRunning { usleep(2_000) }
    }

    /// SIGTERM.
    public func terminate() { signal(SIGTERM) }

    /// SIGINT.
    public func interrupt() { signal(SIGINT) }

    private func signal(_ number: Int32) {
        let pid = state.withLock { $0.exit == nil ? $0.pid : 0 }
        if pid > 0 { kill(pid, number) }
    }

    /// The exit code, or the signal that ended the child; as `Process`, only once it has ended.
    public var terminationStatus: Int32 {
        let status = ended()
        return exitedNormally(status) ? (status >> 8) & 0xff : status & 0x7f
    }

    public var terminationReason: TerminationReason {
        exitedNormally(ended()) ? .exit : .uncaughtSignal
    }

    private func ended() -> Int32 {
        guard let status = state.withLock({ $0.exit }) else {
            preconditionFailure("the child process still runs (or never started)")
        }
        return status
    }

    private func exitedNormally(_ status: Int32) -> Bool { status & 0x7f == 0 }
}

/// Why a ``ChildProcess`` could not start.
public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
