#if os(Linux)
import Foundation
import Glibc
import Logging

/// The thread behind a ``SourceWatcher``: sets a watch on every folder of every source, then reads inotify events,
/// keeps the watches in step with folders created, moved and removed, lets changed files settle, and leaves what
/// is ready (or a rescan) in the ``WatchOutbox``. Everything but the few fields under `lock` belongs to its thread.
///
/// Rules of the walk are the same as a sync's (``SourceScanner``): a folder the excludes match is not descended
/// (nor watched), a file is reported only when include/exclude select it, links only with `follow_symlinks` (never
/// in a loop), FIFOs, sockets, devices and names that are not UTF-8 passed over with a warning in the log.
final class WatchLoop: @unchecked Sendable {
    struct Options {
        var settle: Duration
        /// Files settling at most; beyond, one rescan instead.
        var pendingLimit: Int
        /// Watches held at most, below the kernel's own limit (tests play the kernel's `ENOSPC` with it).
        var watchLimit: Int?
        /// While folders go unwatched for the watch limit, how often to try again (and ask for a rescan).
        var limitRetry: Duration
        /// How often a missing source folder is looked for, and a present one checked to be the same folder.
        var rootCheck: Duration
    }

    /// The state of a source's own folder.
    private enum Root {
        /// Watched, with its identity (device, inode).
        case watched(device: UInt64, inode: UInt64)
        /// Missing (or not a folder): looked for every `rootCheck`.
        case missing
    }

    /// What a path in a source is, for settling.
    private enum Kind {
        case file(SettleQueue.Stamp)
        case folder
        case gone
        case skipped(String)
    }

    // Under `lock`: asked of (and told to) the thread from others.
    private let lock = NSCondition()
    private var stopRequested = false
    private var readingPaused = false
    private var ready = false
    private var exited = false
    private var settlingCount = 0
    private var eventCount = 0

    // The thread's own.
    private let sources: [SourceConfig]
    private let options: Options
    private let inotify: InotifyWatch
    private let outbox: WatchOutbox
    private let logger: Logger
    private var folders = WatchedFolders()
    private var pending: SettleQueue
    private var roots: [Root]
    /// Descriptors this loop removed: their `IN_IGNORED` is expected.
    private var removedByUs: Set<Int32> = []
    /// Files armed since their stamp was last taken (stamped once the events read together are handled).
    private var toStamp: [SettleQueue.Key] = []
    /// Files created since the last stamps, not armed yet: see ``armCreated()``.
    private var created: [SettleQueue.Key] = []
    /// Rescans to ask for once this round's watches are set (so the walk that answers sees what they miss).
    private var rescanReasons: [String] = []
    private var overflowed = false
    /// Some folder could not be watched for the watch limit during this walk / since the last retry.
    private var limitHit = false
    private var limited = false
    private var nextLimitRetry: Int64 = 0
    private var nextRootCheck: Int64 = 0
    private var now: Int64 = 0
    private var thread: Thread?

    init(sources: [SourceConfig], options: Options, outbox: WatchOutbox, logger: Logger) throws {
        self.sources = sources
        self.options = options
        self.outbox = outbox
        self.logger = logger
        inotify = try InotifyWatch()
        pending = SettleQueue(settle: WatchLoop.nanoseconds(options.settle), limit: options.pendingLimit)
        roots = Array(repeating: .missing, count: sources.count)
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "syncgate.watch"
        self.thread = thread
        thread.start()
    }

    // MARK: asked from other threads

    var isReady: Bool { lock.withLock { ready && !exited } }
    var settling: Int { lock.withLock { settlingCount } }
    var eventsRead: Int { lock.withLock { eventCount } }

    /// Asks the thread to end, and (unless called on it) waits until it has.
    func stop() {
        lock.withLock { stopRequested = true }
        inotify.wake()
        guard Thread.current !== thread else { return }
        lock.withLock {
            while !exited && thread != nil { lock.wait() }
        }
    }

    /// Tests: leave the events in the kernel's queue (as a busy reader would) until resumed.
    func pauseReading(_ paused: Bool) {
        lock.withLock { readingPaused = paused }
        inotify.wake()
    }

    // MARK: the thread

    private var shouldStop: Bool { lock.withLock { stopRequested } }

    private func run() {
        defer {
            outbox.finish()
            inotify.close()
            lock.withLock {
                exited = true
                lock.broadcast()
            }
        }
        now = WatchLoop.monotonic()
        for index in sources.indices where !shouldStop {
            installRoot(index, report: false)
        }
        flushRescans()
        lock.withLock { ready = true }
        nextRootCheck = now + WatchLoop.nanoseconds(options.rootCheck)
        logger.debug("watching", metadata: ["sources": "\(sources.count)", "folders": "\(folders.watchCount)"])

        while !shouldStop && !outbox.isFinished {
            now = WatchLoop.monotonic()
            var until = nextRootCheck
            if let due = pending.nextDue { until = min(until, due) }
            if limited { until = min(until, nextLimitRetry) }
            let paused = lock.withLock { readingPaused }
            let milliseconds = Int32(clamping: max(0, (until - now + 999_999) / 1_000_000))
            let readable = inotify.wait(milliseconds: milliseconds, events: !paused)
            if shouldStop { break }
            now = WatchLoop.monotonic()
            if readable { readEvents() }
            if overflowed { recoverFromOverflow() }
            stampArmed()
            now = WatchLoop.monotonic()
            if now >= nextRootCheck {
                checkRoots()
                nextRootCheck = now + WatchLoop.nanoseconds(options.rootCheck)
            }
            if limited && now >= nextLimitRetry { retryLimit() }
            settleDue()
            flushRescans()
            let count = pending.count
            lock.withLock { settlingCount = count }
        }
    }

    /// Reads what the kernel queued (a bounded amount per round, so settling and stop are not starved).
    private func readEvents() {
        var count = 0
        _ = inotify.read(maxBytes: 1 << 20) { wd, mask, _, name in
            count += 1
            handle(wd: wd, mask: mask, name: name)
        }
        lock.withLock { eventCount += count }
    }

    private func handle(wd: Int32, mask: UInt32, name: UnsafeRawBufferPointer) {
        if mask & InotifyWatch.queueOverflow != 0 {
            overflowed = true
            return
        }
        if mask & InotifyWatch.ignored != 0 {
            if removedByUs.remove(wd) != nil { return }
            // Still standing for places: the kernel dropped a watch nobody removed (its folder's file system went,
            // or it was deleted without the `IN_DELETE_SELF` being read first).
            let lost = folders.forget(wd)
            if !lost.isEmpty { lose(lost, why: "its watch was dropped") }
            return
        }
        guard !removedByUs.contains(wd) else { return }  // queued before the watch was removed: stale paths
        let places = folders.places(of: wd)
        guard !places.isEmpty else { return }
        if mask & InotifyWatch.deleteSelf != 0 {
            // A folder deleted holds nothing to send; its own folder gone, a source is lost.
            _ = folders.forget(wd)
            let roots = places.filter { $0.isRoot }
            if !roots.isEmpty { lose(roots, why: "was deleted") }
            return
        }
        if mask & (InotifyWatch.moveSelf | InotifyWatch.unmount) != 0 {
            // A folder renamed is unwatched when its parent's `IN_MOVED_FROM` is read, before this; still watched
            // here, it is a source's own folder, or a rename whose other half was not seen.
            lose(places, why: mask & InotifyWatch.unmount != 0 ? "was unmounted" : "was moved or renamed")
            return
        }
        guard !name.isEmpty else { return }
        for place in places {
            handleEntry(in: place, name: name, mask: mask)
        }
    }

    /// An event about an entry (`name`) of a watched folder.
    private func handleEntry(in place: WatchedFolders.Place, name raw: UnsafeRawBufferPointer, mask: UInt32) {
        let source = sources[place.source]
        let folder = place.path.value
        guard let name = String(validating: raw, as: UTF8.self) else {
            if mask & (InotifyWatch.create | InotifyWatch.movedTo) != 0 {
                let shown = String(decoding: raw, as: UTF8.self)
                warn(source, folder.isEmpty ? shown : folder + "/" + shown, "skipped: the name is not valid UTF-8")
            }
            return
        }
        let relative = folder.isEmpty ? name : folder + "/" + name
        if mask & InotifyWatch.isDirectory != 0 {
            if mask & InotifyWatch.movedFrom != 0 {
                unwatchTree(place.source, relative)
            } else if mask & (InotifyWatch.create | InotifyWatch.movedTo) != 0 {
                // A folder created or moved in: its files may have been written before its watch was set.
                if source.exclude.decision(for: relative) != true { watchTree(place.source, relative, report: true) }
            }
            return
        }
        let key = SettleQueue.Key(source: place.source, path: relative)
        if mask & InotifyWatch.movedFrom != 0 {
            pending.remove(key)  // renamed away: its new name (if in a source) has an event of its own
            return
        }
        if source.selects(relative) {
            if mask & InotifyWatch.create != 0 && !pending.contains(key) {
                created.append(key)  // looked at with the stamps: a file just opened to be written waits for its writes
            } else {
                arm(key)
            }
        } else if source.followSymlinks, mask & (InotifyWatch.create | InotifyWatch.movedTo) != 0,
                  source.exclude.decision(for: relative) != true {
            // Maybe a link to a folder (the excludes judge it as a folder, as a walk does).
            var st = stat()
            if stat(path(place.source, relative), &st) == 0, st.st_mode & S_IFMT == S_IFDIR {
                watchTree(place.source, relative, report: true)
            }
        }
    }

    private func arm(_ key: SettleQueue.Key) {
        if pending.arm(key, now: now) {
            toStamp.append(key)
            return
        }
        let limit = pending.limit
        pending.removeAll()
        toStamp = []
        created = []
        logger.warning("more than \(limit) files changed at once; asking for a rescan instead of settling each")
        askRescan("more than \(limit) files changed at once")
    }

    /// Files created (`IN_CREATE`) this round. An empty file with one link was just opened to be written: it is
    /// armed by its writes and its close (`IN_MODIFY`, `IN_CLOSE_WRITE`), not now, so a file created long before
    /// its first byte (a download waiting for the network) is not reported empty. Anything else is armed: a hard
    /// link, a symbolic link, a file linked in whole (`O_TMPFILE` and `linkat`), which get no other event, and a
    /// FIFO, socket or device, to be passed over with its warning.
    private func armCreated() {
        guard !created.isEmpty else { return }
        for key in created where !pending.contains(key) {
            var st = stat()
            guard lstat(path(key.source, key.path.value), &st) == 0 else { continue }
            if st.st_mode & S_IFMT == S_IFREG && st.st_nlink == 1 && st.st_size == 0 { continue }
            arm(key)
        }
        if created.count > 65_536 { created = [] } else { created.removeAll(keepingCapacity: true) }
    }

    /// Stamps the files armed this round (once each, however many events they had).
    private func stampArmed() {
        armCreated()
        guard !toStamp.isEmpty else { return }
        for key in toStamp where pending.needsStamp(key) {
            switch kind(of: key, warn: true) {
            case .file(let stamp):
                pending.setStamp(key, stamp)
            case .folder:
                pending.remove(key)  // a link to a folder (`follow_symlinks`), or a file replaced by a folder
                if sources[key.source].followSymlinks && sources[key.source].exclude.decision(for: key.path.value) != true {
                    watchTree(key.source, key.path.value, report: true)
                }
            case .gone, .skipped:
                pending.remove(key)
            }
        }
        if toStamp.count > 65_536 { toStamp = [] } else { toStamp.removeAll(keepingCapacity: true) }
    }

    /// Hands over the files that settled: unchanged since their last event for `settle`.
    private func settleDue() {
        var readyKeys: [FileKey] = []
        for (key, stamp) in pending.popDue(now: now) {
            switch kind(of: key, warn: false) {
            case .file(let current):
                if current == stamp {
                    readyKeys.append(FileKey(source: sources[key.source].name, path: key.path.value))
                } else {
                    pending.rearm(key, stamp: current, now: now)
                }
            case .folder, .gone, .skipped:
                break
            }
        }
        outbox.add(readyKeys)
    }

    /// What a path is now, following a link only with `follow_symlinks` (and warning, if asked, what a walk warns).
    private func kind(of key: SettleQueue.Key, warn shouldWarn: Bool) -> Kind {
        let source = sources[key.source]
        let absolute = path(key.source, key.path.value)
        var st = stat()
        guard lstat(absolute, &st) == 0 else { return .gone }
        var kind = st.st_mode & S_IFMT
        if kind == S_IFLNK {
            guard source.followSymlinks else {
                let message = "skipped: symbolic link (set follow_symlinks: true to follow links)"
                if shouldWarn { warn(source, key.path.value, message) }
                return .skipped(message)
            }
            guard stat(absolute, &st) == 0 else {
                if shouldWarn { warn(source, key.path.value, "skipped: broken or looping symbolic link") }
                return .skipped("broken link")
            }
            kind = st.st_mode & S_IFMT
        }
        switch kind {
        case S_IFREG:
            return .file(SettleQueue.Stamp(size: Int64(st.st_size), seconds: st.st_mtim.tv_sec, nanoseconds: st.st_mtim.tv_nsec))
        case S_IFDIR:
            return .folder
        default:
            let what = kind == S_IFIFO ? "a FIFO" : kind == S_IFSOCK ? "a socket" : "a device"
            let message = "skipped: \(what), not a regular file"
            if shouldWarn { warn(source, key.path.value, message) }
            return .skipped(message)
        }
    }

    // MARK: watches

    private func path(_ source: Int, _ relative: String) -> String {
        relative.isEmpty ? sources[source].path : sources[source].path + "/" + relative
    }

    /// Watches a source's own folder and everything below it; `report`: the files found are new (reported once
    /// they settle). A missing folder is looked for again every `rootCheck`.
    private func installRoot(_ index: Int, report: Bool) {
        let source = sources[index]
        var st = stat()
        guard stat(source.path, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else {
            if case .watched = roots[index] {} else if !source.optional {
                logger.warning("source \(source.name): the folder \(source.path) is missing; watching for it to appear")
            }
            roots[index] = .missing
            return
        }
        // Present from now on, even if its watch could not be set (the watch limit brings rescans; a folder that
        // cannot be read is the sync's to report).
        roots[index] = .watched(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
        watchTree(index, "", report: report)
    }

    /// Watches a folder and the folders below it (not those excluded); `report` arms every selected file found.
    /// The watch is set before the folder is listed, so a file written meanwhile is seen one way or the other.
    private func watchTree(_ source: Int, _ top: String, report: Bool) {
        let config = sources[source]
        var stack = [top]
        while let relative = stack.popLast() {
            if shouldStop { return }
            let absolute = path(source, relative)
            guard watchFolder(source, relative, absolute) else { continue }
            guard let dir = opendir(absolute) else {
                if report { warn(config, relative, "cannot read folder: \(String(cString: strerror(errno)))") }
                continue
            }
            defer { closedir(dir) }
            let fd = dirfd(dir)
            while let entry = readdir(dir) {
                let name: String? = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(validatingCString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
                }
                guard let name else {
                    if report {
                        let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix(while: { $0 != 0 })) }
                        let shown = String(decoding: bytes, as: UTF8.self)
                        warn(config, relative.isEmpty ? shown : relative + "/" + shown, "skipped: the name is not valid UTF-8")
                    }
                    continue
                }
                if name == "." || name == ".." { continue }
                let child = relative.isEmpty ? name : relative + "/" + name
                var type = Int32(entry.pointee.d_type)
                if type == Int32(DT_UNKNOWN) || (type == Int32(DT_LNK) && config.followSymlinks) {
                    var st = stat()
                    let flags = type == Int32(DT_LNK) ? Int32(0) : AT_SYMLINK_NOFOLLOW
                    guard fstatat(fd, name, &st, flags) == 0 else {
                        if report && type == Int32(DT_LNK) { warn(config, child, "skipped: broken or looping symbolic link") }
                        continue
                    }
                    switch st.st_mode & S_IFMT {
                    case S_IFDIR: type = Int32(DT_DIR)
                    case S_IFREG: type = Int32(DT_REG)
                    case S_IFLNK: type = Int32(DT_LNK)
                    default: type = Int32(DT_FIFO)  // any other kind: passed over the same way
                    }
                }
                switch type {
                case Int32(DT_DIR):
                    if config.exclude.decision(for: child) != true { stack.append(child) }
                case Int32(DT_REG):
                    if report && config.selects(child) { arm(SettleQueue.Key(source: source, path: child)) }
                case Int32(DT_LNK):
                    if report { warn(config, child, "skipped: symbolic link (set follow_symlinks: true to follow links)") }
                default:
                    // FIFOs, sockets, devices: the stamp warns about what they are, as a walk does.
                    if report && config.selects(child) { arm(SettleQueue.Key(source: source, path: child)) }
                }
            }
        }
    }

    /// Sets one folder's watch. False when it is not watched (gone, unreadable, a loop); a folder left unwatched
    /// for the watch limit is still listed (true), its changes found by the rescans that limit brings.
    private func watchFolder(_ source: Int, _ relative: String, _ absolute: String) -> Bool {
        let config = sources[source]
        let place = WatchedFolders.Place(source: source, path: relative)
        var st = stat()
        guard stat(absolute, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else { return false }
        let device = UInt64(st.st_dev), inode = UInt64(st.st_ino)
        if config.followSymlinks && !relative.isEmpty && folders.isAncestor(source: source, path: relative, device: device, inode: inode) {
            warn(config, relative, "skipped: folder link loop")
            return false
        }
        if let limit = options.watchLimit, folders.watchCount >= limit, folders.folder(at: place) == nil {
            reachedLimit()
            return true
        }
        // The source's own folder may be a link (its path is the config's); below it, links only when followed.
        let follow = relative.isEmpty || config.followSymlinks
        let (wd, error) = inotify.add(absolute, mask: InotifyWatch.folderMask | (follow ? 0 : InotifyWatch.dontFollow))
        guard let wd else {
            if error == ENOSPC {
                reachedLimit()
                return true
            }
            if error != ENOENT && error != ENOTDIR {
                warn(config, relative, "cannot watch folder: \(String(cString: strerror(error)))")
            }
            return false
        }
        removedByUs.remove(wd)
        if let unused = folders.add(place, WatchedFolders.Folder(wd: wd, device: device, inode: inode)) { unwatch(unused) }
        return true
    }

    private func unwatch(_ wd: Int32) {
        inotify.remove(wd)
        removedByUs.insert(wd)
    }

    /// A folder renamed or moved away: its watches go (its new name, if in a source, is watched anew).
    private func unwatchTree(_ source: Int, _ relative: String) {
        for wd in folders.detachTree(source: source, path: relative) { unwatch(wd) }
    }

    /// Places whose watch went without this loop removing it: a source's own folder is looked for again; below it,
    /// the source is walked again to set its watches, and a rescan asked for either way.
    private func lose(_ places: [WatchedFolders.Place], why: String) {
        for index in Set(places.map(\.source)).sorted() {
            let source = sources[index]
            let isRoot = places.contains { $0.source == index && $0.isRoot }
            let what = isRoot ? "its folder \(source.path)" : "the folder \(places.first { $0.source == index }!.path.value)"
            logger.warning("source \(source.name): \(what) \(why); asking for a rescan")
            askRescan("source \(source.name): \(what) \(why)")
            rewatch(index, report: false)
        }
    }

    /// Sets a source's watches anew from a walk: folders created meanwhile are watched, those gone unwatched.
    private func rewatch(_ index: Int, report: Bool) {
        let before = folders.watches(ofSource: index)
        var unused = folders.detachTree(source: index, path: "")
        installRoot(index, report: report)
        unused += before.filter { !folders.isWatched($0) }
        for wd in Set(unused) where !folders.isWatched(wd) && !removedByUs.contains(wd) { unwatch(wd) }
    }

    /// Events were lost: every source is walked again for its watches, and the gateway walks it for its files.
    private func recoverFromOverflow() {
        overflowed = false
        let queued = InotifyWatch.limit("max_queued_events") ?? "?"
        logger.warning("the inotify event queue overflowed (fs.inotify.max_queued_events = \(queued)); asking for a rescan")
        for index in sources.indices { rewatch(index, report: false) }
        askRescan("the inotify event queue overflowed (fs.inotify.max_queued_events = \(queued))")
    }

    private func reachedLimit() {
        limitHit = true
        guard !limited else { return }
        limited = true
        nextLimitRetry = now + WatchLoop.nanoseconds(options.limitRetry)
        let limit = options.watchLimit.map { "\($0) (set by the caller)" } ?? InotifyWatch.limit("max_user_watches") ?? "?"
        logger.error("""
            the inotify watch limit is reached (fs.inotify.max_user_watches = \(limit)): some folders are not watched, \
            their files are found by a rescan every \(options.limitRetry) instead. Raise the limit: \
            `sysctl fs.inotify.max_user_watches=524288` (and in /etc/sysctl.d/ to keep it)
            """)
        askRescan("the inotify watch limit is reached: folders without a watch are found by rescans")
    }

    /// While over the watch limit: try the watches again; still short, ask for another rescan.
    private func retryLimit() {
        limitHit = false
        for index in sources.indices { rewatch(index, report: false) }
        if limitHit {
            askRescan("the inotify watch limit is reached: folders without a watch are found by rescans")
        } else {
            limited = false
            logger.notice("every folder is watched again (below the inotify watch limit)")
            askRescan("every folder is watched again after the inotify watch limit")
        }
        nextLimitRetry = now + WatchLoop.nanoseconds(options.limitRetry)
    }

    /// Looks for missing source folders, and checks present ones are still the folder watched (not replaced, as by
    /// a link switched to another folder, which no event tells).
    private func checkRoots() {
        for index in sources.indices {
            let source = sources[index]
            var st = stat()
            let isFolder = stat(source.path, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
            switch roots[index] {
            case .missing:
                guard isFolder else { continue }
                logger.notice("source \(source.name): the folder \(source.path) is there; watching it")
                rewatch(index, report: true)  // its files are new to the gateway
            case .watched(let device, let inode):
                if isFolder && UInt64(st.st_dev) == device && UInt64(st.st_ino) == inode { continue }
                let why = isFolder ? "was replaced by another folder" : "is gone"
                logger.warning("source \(source.name): its folder \(source.path) \(why); asking for a rescan")
                askRescan("source \(source.name): its folder \(source.path) \(why)")
                rewatch(index, report: false)
            }
        }
    }

    private func askRescan(_ reason: String) {
        if !rescanReasons.contains(reason) { rescanReasons.append(reason) }
    }

    private func flushRescans() {
        for reason in rescanReasons { outbox.rescan(reason) }
        rescanReasons = []
    }

    private func warn(_ source: SourceConfig, _ relative: String, _ message: String) {
        logger.warning("\(source.name): \(relative.isEmpty ? "." : relative): \(message)")
    }

    // MARK: time

    static func monotonic() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
#endif
