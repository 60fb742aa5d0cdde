#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// An exclusive lock beside the state file (`state.sqlite.lock`), held for the whole of a sync, so that a second
/// `syncgate sync` on the same state says so instead of racing the first. Released by the kernel when the process
/// dies, so a killed run never leaves it stuck. A PostgreSQL state is locked the same way by a session advisory
/// lock of the database (``PostgresStateLock``), released by the server when the holder's connection ends.
public final class StateLock: Sendable {
    /// The lock file's path, or a PostgreSQL state's URL without its password.
    public let path: String
    /// The lock file, open while the lock is held (-1: not held).
    private let fd = Mutex<Int32>(-1)
    private let postgres: PostgresStateLock?

    public struct Busy: Error, CustomStringConvertible {
        public var path: String
        /// What the holder wrote: `pid N`, or `gateway pid N` for `syncgate run`.
        public var holder: String
        /// Whether the holder is a gateway (`syncgate run`), which takes `retry` and `forget` at once.
        public var isGateway: Bool { holder.hasPrefix("gateway ") }
        public var description: String {
            if isGateway {
                let state = path.hasSuffix(".lock") ? String(path.dropLast(5)) : path
                return "a gateway (\(holder.dropFirst("gateway ".count))) is running on \(state): it sends files as they come; use syncgate status, retry or forget alongside it"
            }
            return "another syncgate (\(holder)) is using \(path); try again when it has finished"
        }
    }

    public init(statePath: String) {
        self.path = statePath + ".lock"
        self.postgres = nil
    }

    /// The lock of the state `state` names.
    public init(state: StateLocation) {
        switch state {
        case .sqlite(let path):
            self.path = path + ".lock"
            self.postgres = nil
        case .postgres(let location):
            self.path = location.displayName
            self.postgres = PostgresStateLock(location: location)
        }
    }

    /// Takes the lock or throws ``Busy`` at once. `gateway`: the holder is `syncgate run` (others are told so).
    /// A PostgreSQL state that cannot be reached throws a ``LedgerError`` (`temporary`).
    public func acquire(gateway: Bool = false) throws {
        if let postgres {
            try postgres.acquire(gateway: gateway)
            return
        }
        try? FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o700])
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw LedgerError(path: path, message: "cannot create the lock file beside the state file: \(String(cString: strerror(errno))) (the state's folder must be writable)")
        }
        // `status` takes the lock for a moment to see whether a sync runs: wait out such a glance (300 ms at most).
        var locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        for _ in 0..<30 where !locked {
            usleep(10_000)
            locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        }
        if !locked {
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = pread(fd, &buffer, 64, 0)
            close(fd)
            let holder = n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : "unknown pid"
            throw Busy(path: path, holder: holder)
        }
        let text = (gateway ? "gateway " : "") + "pid \(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = text.withCString { pwrite(fd, $0, strlen($0), 0) }
        self.fd.withLock { $0 = fd }
    }

    public func release() {
        postgres?.release()
        fd.withLock { fd in
            guard fd >= 0 else { return }
            flock(fd, LOCK_UN)
            close(fd)
            fd = -1
        }
    }

    /// Whether a gateway (`syncgate run`) holds the lock of `state` now.
    public static func gatewayHolds(state: StateLocation) -> Bool {
        switch state {
        case .sqlite(let path): gatewayHolds(statePath: path)
        case .postgres(let location): PostgresStateLock.holder(of: location)?.hasPrefix("gateway ") ?? false
        }
    }

    /// Whether some process holds the lock of `state` now (without taking it).
    public static func isHeld(state: StateLocation) -> Bool {
        switch state {
        case .sqlite(let path): isHeld(statePath: path)
        case .postgres(let location): PostgresStateLock.holder(of: location) != nil
        }
    }

    /// Whether a gateway (`syncgate run`) holds the lock now (what it wrote says so).
    public static func gatewayHolds(statePath: String) -> Bool {
        guard isHeld(statePath: statePath), let text = try? String(contentsOfFile: statePath + ".lock", encoding: .utf8) else { return false }
        return text.hasPrefix("gateway ")
    }

    /// Whether some process holds the lock now (without taking it).
    public static func isHeld(statePath: String) -> Bool {
        let fd = open(statePath + ".lock", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        // `status` takes the lock for a moment to see whether a sync runs: wait out such a glance (300 ms at most).
        var locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        for _ in 0..<30 where !locked {
            usleep(10_000)
            locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        }
        if !locked { return true }
        flock(fd, LOCK_UN)
        return false
    }

    deinit { release() }
}
