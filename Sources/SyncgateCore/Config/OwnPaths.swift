#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What syncgate itself writes inside a source's folder, which that source never walks, watches or sends:
/// - the folder of a local destination the source is routed to (otherwise each sync would send the copies the last
///   one made, one folder deeper, without end; a move into a folder inside the source is then safe);
/// - syncgate's state: its `.syncgate` folder, or, where the state file lies elsewhere in the source, the ledger's
///   files (the file, its `-wal`, `-shm`, `-journal` and `.lock`) and the cached tokens beside it (`token-*.json`).
///   A live SQLite file changes under every run, so it would never settle and every run would end in 75;
/// - the files the config reads secrets from (`KEY_file`, a Sheets `credentials_file`), and the config itself when a
///   secret is written in it: a secret is never sent.
///
/// Relative to the source's folder; found when the config is loaded (``GatewayConfig``), from the folders as they
/// are on disk (``FolderOnDisk``). `syncgate validate` lists them under the source.
public struct OwnPaths: Sendable, Hashable {
    /// A folder or file, and whose it is ("destination archive's folder", "syncgate's state").
    public struct Entry: Sendable, Hashable, CustomStringConvertible {
        public var path: String
        public var owner: String
        public var description: String { "\(path) (\(owner))" }
    }

    /// Folders never walked.
    public private(set) var folders: [Entry] = []
    /// Files never sent.
    public private(set) var files: [Entry] = []
    /// The folder whose `token-*.json` files are cached tokens ("" for the source's own folder).
    public private(set) var tokenFolder: String?
    /// For a source that follows links: syncgate's folders (a local destination's it is routed to, the state's) as
    /// real absolute paths, wherever they are, since a link in the source may lead into one. A walk looks them up
    /// when it starts (``identities()``) and does not enter a folder that is one of them.
    public private(set) var linkedFolders: [String] = []

    public init() {}

    public var isEmpty: Bool { folders.isEmpty && files.isEmpty && tokenFolder == nil && linkedFolders.isEmpty }

    /// Everything listed, for `syncgate validate`.
    public var entries: [Entry] {
        folders.map { Entry(path: $0.path + "/", owner: $0.owner) } + files
            + (tokenFolder.map { [Entry(path: ($0.isEmpty ? "" : $0 + "/") + "token-*.json", owner: "cached tokens")] } ?? [])
    }

    mutating func addFolder(_ path: String, owner: String) {
        if !folders.contains(where: { $0.path == path }) { folders.append(Entry(path: path, owner: owner)) }
    }

    /// The state file at `path` (relative), and the files SQLite and syncgate keep beside it.
    mutating func addStateFile(_ path: String) {
        for suffix in ["", "-wal", "-shm", "-journal", ".lock"] where !files.contains(where: { $0.path == path + suffix }) {
            files.append(Entry(path: path + suffix, owner: "syncgate's state"))
        }
    }

    mutating func addFile(_ path: String, owner: String) {
        if !files.contains(where: { $0.path == path }) { files.append(Entry(path: path, owner: owner)) }
    }

    mutating func setTokenFolder(_ path: String) { tokenFolder = path }

    mutating func addLinkedFolder(_ path: String) {
        if !linkedFolders.contains(path) { linkedFolders.append(path) }
    }

    /// The device and inode of each of ``linkedFolders`` that exists now.
    func identities() -> Set<[UInt64]> {
        var found = Set<[UInt64]>()
        for path in linkedFolders {
            var info = stat()
            if stat(path, &info) == 0 { found.insert([UInt64(info.st_dev), UInt64(info.st_ino)]) }
        }
        return found
    }

    /// Whether `relative` is one of the folders never walked.
    public func holdsFolder(_ relative: String) -> Bool {
        folders.contains { $0.path == relative }
    }

    /// Whether the file at `relative` is syncgate's own: listed, a cached token, or below a folder never walked.
    public func holdsFile(_ relative: String) -> Bool { owner(of: relative) != nil }

    /// Whose the file at `relative` is, when it is syncgate's own ("destination archive's folder").
    public func owner(of relative: String) -> String? {
        if let file = files.first(where: { $0.path == relative }) { return file.owner }
        if let folder = folders.first(where: { OwnPaths.isBelow(relative, $0.path) }) { return folder.owner }
        guard let tokenFolder else { return nil }
        let name: Substring
        if tokenFolder.isEmpty {
            guard !relative.contains("/") else { return nil }
            name = Substring(relative)
        } else {
            guard OwnPaths.isBelow(relative, tokenFolder) else { return nil }
            name = relative.dropFirst(tokenFolder.count + 1)
        }
        return !name.contains("/") && name.hasPrefix("token-") && name.hasSuffix(".json") ? "cached tokens" : nil
    }

    /// Whether `relative` lies below the folder `folder` (asked per file: no string is built).
    private static func isBelow(_ relative: String, _ folder: String) -> Bool {
        let path = relative.utf8, prefix = folder.utf8
        return path.count > prefix.count && path.starts(with: prefix) && path[path.index(path.startIndex, offsetBy: prefix.count)] == UInt8(ascii: "/")
    }
}
