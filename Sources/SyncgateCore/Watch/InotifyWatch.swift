#if os(Linux)
import Foundation
import Glibc
import Synchronization

/// One inotify instance (`inotify_init1(IN_NONBLOCK | IN_CLOEXEC)`) and a pipe that wakes the thread polling it,
/// so that a stop never waits for the next file event. Used by one thread (``WatchLoop``); only ``wake()`` may be
/// called from others.
///
/// Unchecked: `buffer` is not `Sendable`, and only the watching thread reads into it; `closed` is behind a lock.
final class InotifyWatch: @unchecked Sendable {
    // The event bits (inotify(7)); the kernel's values, spelled out as UInt32 once.
    static let modify = UInt32(IN_MODIFY)
    static let attrib = UInt32(IN_ATTRIB)
    static let closeWrite = UInt32(IN_CLOSE_WRITE)
    static let movedFrom = UInt32(IN_MOVED_FROM)
    static let movedTo = UInt32(IN_MOVED_TO)
    static let create = UInt32(IN_CREATE)
    static let delete = UInt32(IN_DELETE)
    static let deleteSelf = UInt32(IN_DELETE_SELF)
    static let moveSelf = UInt32(IN_MOVE_SELF)
    static let unmount = UInt32(IN_UNMOUNT)
    static let queueOverflow = UInt32(IN_Q_OVERFLOW)
    static let ignored = UInt32(IN_IGNORED)
    static let onlyDirectory = UInt32(IN_ONLYDIR)
    static let dontFollow = UInt32(IN_DONT_FOLLOW)
    static let excludeUnlinked = UInt32(IN_EXCL_UNLINK)
    static let isDirectory = UInt32(IN_ISDIR)

    /// What every folder is watched for. `IN_CLOSE_WRITE` (a file written and closed) and `IN_MOVED_TO` (renamed
    /// in) are the two ways a file is finished; `IN_MODIFY` arms (and re-arms) settling while a file is still being
    /// written, so a file held open by a writer that never closes it is still reported once quiet; `IN_CREATE`
    /// makes a folder watched, and a hard or symbolic link (which gets no other event) seen (a new empty file waits
    /// for its writes, see ``WatchLoop``); `IN_ATTRIB` catches a modification time
    /// set after the write (`touch`, `cp -p`, `rsync -t`), which the planner compares; `IN_MOVED_FROM` drops a file
    /// renamed away and unwatches a folder renamed away; `IN_DELETE` and `IN_MOVED_FROM` of a file hand its path
    /// over at once, so that its rows are marked removed (and `delete_remote` deletes its copies) in seconds; the
    /// `_SELF` events say a watched folder itself went. `IN_EXCL_UNLINK`: no events for files already unlinked.
    static let folderMask = modify | attrib | closeWrite | movedFrom | movedTo | create | delete | deleteSelf | moveSelf
        | onlyDirectory | excludeUnlinked

    /// Fixed part of `struct inotify_event`: wd, mask, cookie, len (then `len` bytes of NUL-padded name).
    private static let headerSize = 16
    private static let bufferSize = 64 << 10

    let descriptor: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let buffer: UnsafeMutableRawPointer
    /// Guards `closed` against ``wake()`` from another thread: a write to the pipe's descriptor after it was
    /// closed would land in whatever the number was given to next (a socket of an HTTP client, say).
    private let closed = Mutex(false)

    /// Opens the instance; throws a ``WatchError`` saying which limit to raise when the kernel refuses.
    init() throws {
        let fd = inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC))
        guard fd >= 0 else {
            let code = errno
            if code == EMFILE {
                throw WatchError(message: "cannot start watching: too many inotify instances for this user"
                    + " (fs.inotify.max_user_instances = \(InotifyWatch.limit("max_user_instances") ?? "?"));"
                    + " raise it with `sysctl fs.inotify.max_user_instances=512`")
            }
            throw WatchError(message: "cannot start watching: inotify_init1: \(String(cString: strerror(code)))")
        }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            let code = errno
            _ = Glibc.close(fd)
            throw WatchError(message: "cannot start watching: pipe: \(String(cString: strerror(code)))")
        }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        descriptor = fd
        wakeRead = ends[0]
        wakeWrite = ends[1]
        buffer = UnsafeMutableRawPointer.allocate(byteCount: InotifyWatch.bufferSize, alignment: 8)
    }

    deinit {
        close()
        buffer.deallocate()
    }

    /// Closes the instance (every watch goes with it) and the wake pipe.
    func close() {
        closed.withLock { closed in
            guard !closed else { return }
            closed = true
            _ = Glibc.close(descriptor)
            _ = Glibc.close(wakeRead)
            _ = Glibc.close(wakeWrite)
        }
    }

    /// The value of `/proc/sys/fs/inotify/<name>`, for messages.
    static func limit(_ name: String) -> String? {
        guard let file = fopen("/proc/sys/fs/inotify/\(name)", "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 32)
        guard fgets(&line, Int32(line.count), file) != nil else { return nil }
        let text = String(decoding: line.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Watches a folder: its descriptor (the same one again for a folder already watched), or nil and the errno.
    func add(_ path: String, mask: UInt32) -> (wd: Int32?, error: Int32) {
        let wd = inotify_add_watch(descriptor, path, mask)
        return wd >= 0 ? (wd, 0) : (nil, errno)
    }

    /// Ends a watch; the kernel then queues an `IN_IGNORED` for it.
    func remove(_ wd: Int32) {
        _ = inotify_rm_watch(descriptor, wd)
    }

    /// Wakes the thread in ``wait(milliseconds:events:)`` (callable from any thread).
    /// Returns whether a byte was written (never once closed).
    @discardableResult
    func wake() -> Bool {
        closed.withLock { closed in
            guard !closed else { return false }
            var byte: UInt8 = 1
            return write(wakeWrite, &byte, 1) == 1
        }
    }

    /// Waits until events can be read (when `events`), ``wake()`` is called, or the time runs out (-1: no limit).
    /// Returns whether events can be read.
    func wait(milliseconds: Int32, events: Bool) -> Bool {
        var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        let ready = poll(&fds, events ? 2 : 1, milliseconds)
        guard ready > 0 else { return false }
        if fds[0].revents != 0 {
            var sink = [UInt8](repeating: 0, count: 64)
            while Glibc.read(wakeRead, &sink, sink.count) > 0 {}
        }
        return events && fds[1].revents != 0
    }

    /// Reads the events waiting, up to about `maxBytes` of them, handing each to `visit` (watch descriptor, mask,
    /// cookie, name bytes without the padding; empty for an event about the watched folder itself). Returns
    /// whether more may be waiting.
    func read(maxBytes: Int, _ visit: (Int32, UInt32, UInt32, UnsafeRawBufferPointer) -> Void) -> Bool {
        var total = 0
        while total < maxBytes {
            let count = Glibc.read(descriptor, buffer, InotifyWatch.bufferSize)
            if count <= 0 { return false }  // EAGAIN: nothing more now (EINTR: the next poll says)
            total += count
            var offset = 0
            while offset + InotifyWatch.headerSize <= count {
                let base = buffer + offset
                let wd = base.loadUnaligned(as: Int32.self)
                let mask = base.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
                let cookie = base.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
                let length = Int(base.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
                let nameStart = base + InotifyWatch.headerSize
                let raw = UnsafeRawBufferPointer(start: nameStart, count: min(length, count - offset - InotifyWatch.headerSize))
                let nameLength = raw.firstIndex(of: 0) ?? raw.count
                visit(wd, mask, cookie, UnsafeRawBufferPointer(rebasing: raw[..<nameLength]))
                offset += InotifyWatch.headerSize + length
            }
        }
        return true
    }
}

#endif
