#if os(Linux)
import Foundation
import Glibc
import Logging

/// The watches: setting them on a source's tree, losing and setting them again, the watch limit, the sources'
/// roots checked, and the rescans asked for.
extension WatchLoop {
    func path(_ source: Int, _ relative: String) -> String {
        relative.isEmpty ? sources[source].path : sources[source].path + "/" + relative
    }

    /// Watches a source's own folder and everything below it; `report`: the files found are new (reported once
    /// they settle). A missing folder is looked for again every `rootCheck`.
    func installRoot(_ index: Int, report: Bool) {
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
    /// Following links, it takes in at most `max_entries` entries, as a walk does (``SourceScanner``): links that
    /// lead to the same folders over and over would otherwise have it list millions of paths.
    func watchTree(_ source: Int, _ top: String, report: Bool) {
        let config = sources[source]
        var stack = [top]
        var entries = 0
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
                        let shown = TerminalText.undecodable(bytes)
                        warn(config, relative.isEmpty ? shown : relative + "/" + shown, "skipped: the name is not valid UTF-8")
                    }
                    continue
                }
                if name == "." || name == ".." { continue }
                let child = relative.isEmpty ? name : relative + "/" + name
                if config.followSymlinks {
                    entries += 1
                    if entries > config.maxEntries.value {
                        warn(config, child, "stopped watching: more than \(config.maxEntries.value) entries (max_entries, with follow_symlinks); "
                             + "the rest is not watched (the periodic rescans walk it, within the same bound)")
                        return
                    }
                }
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
                    if !config.skipsFolder(child) { stack.append(child) }
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
    func watchFolder(_ source: Int, _ relative: String, _ absolute: String) -> Bool {
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

    func unwatch(_ wd: Int32) {
        inotify.remove(wd)
        removedByUs.insert(wd)
    }

    /// A folder renamed or moved away: its watches go (its new name, if in a source, is watched anew).
    func unwatchTree(_ source: Int, _ relative: String) {
        for wd in folders.detachTree(source: source, path: relative) { unwatch(wd) }
    }

    /// Places whose watch went without this loop removing it: a source's own folder is looked for again; below it,
    /// the source is walked again to set its watches, and a rescan asked for either way.
    func lose(_ places: [WatchedFolders.Place], why: String) {
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
    func rewatch(_ index: Int, report: Bool) {
        let before = folders.watches(ofSource: index)
        var unused = folders.detachTree(source: index, path: "")
        installRoot(index, report: report)
        unused += before.filter { !folders.isWatched($0) }
        for wd in Set(unused) where !folders.isWatched(wd) && !removedByUs.contains(wd) { unwatch(wd) }
    }

    /// Events were lost: every source is walked again for its watches, and the gateway walks it for its files.
    func recoverFromOverflow() {
        overflowed = false
        let queued = InotifyWatch.limit("max_queued_events") ?? "?"
        logger.warning("the inotify event queue overflowed (fs.inotify.max_queued_events = \(queued)); asking for a rescan")
        for index in sources.indices { rewatch(index, report: false) }
        askRescan("the inotify event queue overflowed (fs.inotify.max_queued_events = \(queued))")
    }

    func reachedLimit() {
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
    func retryLimit() {
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
    func checkRoots() {
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

    func askRescan(_ reason: String) {
        if !rescanReasons.contains(reason) { rescanReasons.append(reason) }
    }

    func flushRescans() {
        for reason in rescanReasons { outbox.rescan(reason) }
        rescanReasons = []
    }

    func warn(_ source: SourceConfig, _ relative: String, _ message: String) {
        logger.warning("\(source.name): \(relative.isEmpty ? "." : relative): \(message)")
    }
}
#endif
