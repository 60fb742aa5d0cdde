#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SyncgateCore
import Synchronization

/// One running plugin program: started with `posix_spawn` in a process group of its own (so that a Ctrl-C at the
/// terminal reaches syncgate, which ends its plugins itself), with its signals at their defaults and none blocked,
/// in the config's folder, with three pipes. syncgate writes requests to its stdin without ever blocking (the pipe
/// is non-blocking: a plugin that stops reading is found out, not waited for), and two threads of its own read its
/// stdout and stderr with plain blocking `read`s, so neither depends on the cooperative pool.
final class PluginProcess: Sendable {
    let pid: pid_t
    let stdout: Int32
    let stderr: Int32
    /// Its stdin (-1 once closed), and its wait status once reaped. Held through a whole ``write(_:patience:)``.
    private let state: Mutex<(stdin: Int32, reaped: Int32?)>

    /// Starts `executable` (an absolute path) with `arguments` (after `argv[0]`), `environment` and working folder
    /// `directory`. Throws a `POSIXError` when it cannot be started.
    init(executable: String, arguments: [String], environment: [String: String], directory: String?) throws {
        _ = PluginProcess.ignoreBrokenPipes
        var inPipe: [Int32] = [0, 0], outPipe: [Int32] = [0, 0], errPipe: [Int32] = [0, 0]
        guard PluginProcess.makePipe(&inPipe) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        guard PluginProcess.makePipe(&outPipe) == 0 else {
            close(inPipe[0]); close(inPipe[1])
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        guard PluginProcess.makePipe(&errPipe) == 0 else {
            for fd in inPipe + outPipe { close(fd) }
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        // Nothing else of syncgate's reaches the plugin (a descriptor a library opened without close-on-exec
        // included): only its three pipes.
        _ = SpawnFileActions.addclosefrom?(&actions, 3)
        if let directory, let addchdir = SpawnFileActions.addchdir {
            _ = directory.withCString { addchdir(&actions, $0) }
        }
        let attributes = HelperSpawnAttributes()

        let argv = [executable] + arguments
        let envp = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        var cArgv: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        var cEnvp: [UnsafeMutablePointer<CChar>?] = envp.map { strdup($0) } + [nil]
        defer {
            for pointer in cArgv { free(pointer) }
            for pointer in cEnvp { free(pointer) }
        }
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, &attributes.raw, &cArgv, &cEnvp)
        close(inPipe[0])
        close(outPipe[1])
        close(errPipe[1])
        guard status == 0 else {
            close(inPipe[1]); close(outPipe[0]); close(errPipe[0])
            throw POSIXError(POSIXErrorCode(rawValue: status) ?? .EIO)
        }
        pid = child
        let stdin = inPipe[1]
        state = Mutex((stdin: stdin, reaped: nil))
        stdout = outPipe[0]
        stderr = errPipe[0]
        _ = fcntl(stdin, F_SETFL, fcntl(stdin, F_GETFL) | O_NONBLOCK)
    }

    /// A write to a plugin that has exited must fail with EPIPE, not kill syncgate (or a test runner) with SIGPIPE:
    /// the signal is ignored process-wide once the first plugin starts (the CLI ignores it anyway). Plugins get it
    /// back at its default (see the spawn attributes).
    static let ignoreBrokenPipes: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// A pipe whose ends close on exec, made so atomically where `pipe2` exists (another program started at the same
    /// moment must not inherit them: the plugin would then not see its stdin close).
    static func makePipe(_ fds: inout [Int32]) -> Int32 {
        if let pipe2 = PluginProcess.pipe2 { return fds.withUnsafeMutableBufferPointer { pipe2($0.baseAddress!, O_CLOEXEC) } }
        let r = fds.withUnsafeMutableBufferPointer { pipe($0.baseAddress!) }
        if r == 0 { for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) } }
        return r
    }

    static let pipe2: (@convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32)? = {
        #if os(Linux)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32).self)
        #else
        return nil
        #endif
    }()

    /// Why a write to the plugin failed.
    enum WriteFailure: Error {
        /// Its stdin is closed (it exited, or closed it).
        case closed
        /// It has not read its stdin for `seconds`: its pipe stayed full.
        case notReading(seconds: Int)
    }

    /// Writes `bytes` (one or more whole lines) to the plugin's stdin. A pipe that stays full for `patience`
    /// means the plugin stopped reading.
    func write(_ bytes: [UInt8], patience: Duration = .seconds(5)) throws(WriteFailure) {
        try state.withLock { (state) throws(WriteFailure) -> Void in
            let stdin = state.stdin
            guard stdin >= 0 else { throw .closed }
            var written = 0
            let deadline = ContinuousClock.now + patience
            while written < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.write(stdin, $0.baseAddress! + written, bytes.count - written) }
                if n >= 0 {
                    written += n
                    continue
                }
                switch errno {
                case EINTR: continue
                case EAGAIN:
                    if ContinuousClock.now >= deadline { throw .notReading(seconds: Int(patience.components.seconds)) }
                    var poller = pollfd(fd: stdin, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&poller, 1, 100)
                default:
                    throw .closed
                }
            }
        }
    }

    /// Closes the plugin's stdin: it should finish and exit.
    func closeInput() {
        state.withLock { state in
            if state.stdin >= 0 {
                close(state.stdin)
                state.stdin = -1
            }
        }
    }

    /// Whether its stderr pipe holds bytes not read yet, or its end not yet read (every writer has closed it).
    var stderrHasUnread: Bool {
        var poller = pollfd(fd: stderr, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) > 0 else { return false }
        return poller.revents & Int16(POLLIN | POLLHUP) != 0
    }

    /// SIGKILL to the plugin and its process group (whatever it started goes too).
    func kill() {
        let alive = state.withLock { $0.reaped == nil }
        guard alive else { return }
        _ = Glibc.kill(-pid, SIGKILL)
        _ = Glibc.kill(pid, SIGKILL)
    }

    /// Waits for the plugin to exit, at most `timeout`, then kills it; returns its wait status text
    /// ("status 3", "signal 9").
    @discardableResult
    func reap(within timeout: Duration) -> String {
        if let done = state.withLock({ $0.reaped }) { return PluginProcess.describe(done) }
        let deadline = ContinuousClock.now + timeout
        var status: Int32 = 0
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { break }
            if r < 0 && errno != EINTR {
                status = -1
                break
            }
            if ContinuousClock.now >= deadline {
                kill()
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                break
            }
            usleep(5_000)
        }
        state.withLock { $0.reaped = status }
        closeInput()
        return PluginProcess.describe(status)
    }

    static func describe(_ status: Int32) -> String {
        if status == -1 { return "gone" }
        let signal = status & 0x7F
        if signal == 0 { return "status \((status >> 8) & 0xFF)" }
        return "signal \(signal)"
    }

    deinit {
        closeInput()
        close(stdout)
        close(stderr)
    }
}

/// Reads lines from a descriptor on a thread of its own, each at most ``PluginProtocol/maxLineBytes``.
enum LineReader {
    /// Calls `line` with each line (without its newline) until the end of the stream or until `line` returns false;
    /// calls `tooLong` once (and stops) when a line grows past the limit. Returns when the stream ends.
    static func read(_ fd: Int32, limit: Int = PluginProtocol.maxLineBytes, line: (ArraySlice<UInt8>) -> Bool, tooLong: () -> Void) {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(64 * 1024)
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var scanned = 0
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return
            }
            if n == 0 { return }
            buffer.append(contentsOf: chunk[0..<n])
            var start = 0
            while let newline = buffer[(start + scanned)...].firstIndex(of: 0x0A) {
                if newline - start > limit {
                    tooLong()
                    return
                }
                var end = newline
                if end > start && buffer[end - 1] == 0x0D { end -= 1 }
                if !line(buffer[start..<end]) { return }
                start = newline + 1
                scanned = 0
            }
            if start > 0 { buffer.removeFirst(start) }
            scanned = buffer.count
            if buffer.count > limit {
                tooLong()
                return
            }
        }
    }
}
