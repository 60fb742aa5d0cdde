#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SyncgateCore

/// A helper program (a profile's `credential_process`) run by the shell within bounds: in a process group of its
/// own, stdin from `/dev/null`, its standard output read up to `outputLimit` bytes (one byte more and the group is
/// killed: the answer is refused, never held), its standard error kept up to `errorLimit` bytes (the rest read and
/// dropped), and all of it within `timeout`: past it the group gets SIGTERM, then SIGKILL `grace` later whether
/// or not the shell ended, so that neither the shell nor a child of it that ignores SIGTERM is left running.
/// Everything runs on a thread of its own (blocking `poll`s), never on the cooperative pool.
struct BoundedProcess: Sendable {
    enum Ending: Equatable, Sendable {
        /// Exited by itself with this status (a signal that ended it: 128 + its number).
        case exited(Int32)
        /// Still running at the deadline: killed.
        case timedOut
        /// Wrote more than the output limit: killed.
        case outputTooLarge
    }

    struct Outcome: Sendable {
        var ending: Ending
        var output: [UInt8]
        var errors: [UInt8]
        /// The shell's process id (its group's), for tests that check it is gone.
        var pid: pid_t
    }

    var command: String
    var timeout: TimeInterval
    var outputLimit: Int
    var errorLimit = 64 << 10
    var grace: TimeInterval = 2

    func run() async throws -> Outcome {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Outcome, any Error>) in
            let thread = Thread {
                do { continuation.resume(returning: try runBlocking()) } catch { continuation.resume(throwing: error) }
            }
            thread.name = "syncgate-helper"
            thread.start()
        }
    }

    func runBlocking() throws -> Outcome {
        var outPipe: [Int32] = [0, 0], errPipe: [Int32] = [0, 0]
        guard BoundedProcess.makePipe(&outPipe) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        guard BoundedProcess.makePipe(&errPipe) == 0 else {
            close(outPipe[0]); close(outPipe[1])
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        // Nothing else of syncgate's reaches the command (a descriptor opened without close-on-exec included).
        _ = SpawnFileActions.addclosefrom?(&actions, 3)
        let attributes = HelperSpawnAttributes()
        let words: [String] = ["/bin/sh", "-c", command]
        var argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, &attributes.raw, &argv, environ)
        close(outPipe[1])
        close(errPipe[1])
        guard spawned == 0 else {
            close(outPipe[0]); close(errPipe[0])
            throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO)
        }
        defer { close(outPipe[0]); close(errPipe[0]) }

        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        var output: [UInt8] = [], errors: [UInt8] = []
        var open = [true, true]
        var ending: Ending?
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        loop: while true {
            let left = deadline - ContinuousClock.now
            if left <= .zero {
                ending = .timedOut
                break
            }
            if !open[0] && !open[1] {
                // Both pipes closed: wait for the shell itself (it may close them and go on running).
                if BoundedProcess.hasExited(pid) { break }
                usleep(10_000)
                continue
            }
            var fds = [pollfd(fd: open[0] ? outPipe[0] : -1, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: open[1] ? errPipe[0] : -1, events: Int16(POLLIN), revents: 0)]
            let wait = Int32(min(max(left.milliseconds, 1), 200))
            let ready = poll(&fds, 2, wait)
            if ready < 0 {
                if errno == EINTR { continue }
                ending = .timedOut
                break
            }
            for index in 0..<2 where open[index] && fds[index].revents != 0 {
                let n = read(fds[index].fd, &buffer, buffer.count)
                if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                if n <= 0 {
                    open[index] = false
                    continue
                }
                if index == 0 {
                    output.append(contentsOf: buffer[0..<n])
                    if output.count > outputLimit {
                        ending = .outputTooLarge
                        output = []
                        break loop
                    }
                } else if errors.count < errorLimit {
                    errors.append(contentsOf: buffer[0..<min(n, errorLimit - errors.count)])
                }
            }
        }
        if let ending {
            // The group, not only the shell: a child that holds the pipes (or ignores SIGTERM) goes too. The shell is
            // not reaped before the last kill, so its group id cannot have been reused.
            if ending == .timedOut {
                kill(-pid, SIGTERM)
                let graceEnd = ContinuousClock.now + .milliseconds(Int64(grace * 1000))
                while ContinuousClock.now < graceEnd && !BoundedProcess.hasExited(pid) { usleep(20_000) }
            }
            kill(-pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            return Outcome(ending: ending, output: output, errors: errors, pid: pid)
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let code: Int32 = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Outcome(ending: .exited(code), output: output, errors: errors, pid: pid)
    }

    /// Whether `pid` (a child) has ended, without reaping it.
    static func hasExited(_ pid: pid_t) -> Bool {
        var info = siginfo_t()
        let r = waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT)
        return r == 0 && BoundedProcess.pid(of: info) == pid
    }

    static func pid(of info: siginfo_t) -> pid_t {
        #if os(Linux)
        info._sifields._sigchld.si_pid
        #else
        info.si_pid
        #endif
    }

    /// A pipe whose ends close on exec (another program started at the same moment must not hold them open).
    static func makePipe(_ fds: inout [Int32]) -> Int32 {
        let r = fds.withUnsafeMutableBufferPointer { pipe($0.baseAddress!) }
        if r == 0 { for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) } }
        return r
    }
}

extension Duration {
    /// Whole milliseconds (rounded down).
    fileprivate var milliseconds: Int {
        let (seconds, attoseconds) = components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}
