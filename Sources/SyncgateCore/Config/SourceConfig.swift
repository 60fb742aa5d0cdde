import Foundation

/// A local folder whose files are delivered.
public struct SourceConfig: Sendable, Hashable {
    public var name: String
    /// Absolute path of the folder.
    public var path: String
    public var include: GlobSet
    public var exclude: GlobSet
    /// Follow symbolic links (to files and folders) inside the source. Off by default.
    public var followSymlinks: Bool
    /// A missing folder is normal (a card not inserted): it is noted, not an error.
    public var optional: Bool
    /// Where `path` is written in the config (file, line, column, key), for errors about the folder.
    public var pathLocation: ConfigError?
    /// A file modified less than this long ago is not sent yet (it may be half-written); zero: no wait.
    public var minAge: Duration = .zero
    /// What happens to a file once every destination it is routed to holds it (a route may say otherwise).
    public var afterSync: AfterSync = .keep
    /// A walk that finds more than this share of the files of the last complete walk gone deletes nothing of the
    /// source at destinations with `delete_remote` (see ``SourceJudge``).
    public var maxDeleteFraction: DeleteFraction = .default
    /// With `followSymlinks`: the most entries one walk takes in, each time it reaches one (through another link
    /// too); past it the walk stops (see ``SourceScanner``).
    public var maxEntries: EntryBound = .default
    /// What syncgate itself writes in the folder (a local destination's folder, its state): never walked nor sent.
    public var own = OwnPaths()

    public init(name: String, path: String, include: GlobSet, exclude: GlobSet, followSymlinks: Bool = false,
                optional: Bool = false, pathLocation: ConfigError? = nil, minAge: Duration = .zero) {
        self.minAge = minAge
        self.name = name
        self.path = path
        self.include = include
        self.exclude = exclude
        self.followSymlinks = followSymlinks
        self.optional = optional
        self.pathLocation = pathLocation
    }

    /// Whether the folder is there; otherwise the error to report, located at `path` in the config.
    public func checkFolder() -> ConfigError? {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue { return nil }
        var error = pathLocation ?? ConfigError(file: "", line: nil, column: nil, keyPath: "sources.\(name).path", message: "")
        let exists = FileManager.default.fileExists(atPath: path)
        error.message = exists ? "\(path) is not a folder" : "the folder \(path) does not exist (create it, or mark the source `optional: true`)"
        return error
    }

    /// Whether a relative path is selected by include/exclude (and is not syncgate's own, ``OwnPaths``).
    public func selects(_ relativePath: String) -> Bool {
        include.matches(relativePath) && !(exclude.decision(for: relativePath) ?? false) && (own.isEmpty || !own.holdsFile(relativePath))
    }

    /// Whether the folder at a relative path is passed over with all it holds: excluded, or syncgate's own.
    public func skipsFolder(_ relativePath: String) -> Bool {
        exclude.decision(for: relativePath) == true || own.holdsFolder(relativePath)
    }
}

struct RawSource: Decodable {
    var name: String
    var path: String
    var include: GlobSet?
    var exclude: GlobSet?
    var followSymlinks: Bool?
    var optional: Bool?
    var minAge: ConfigDuration?
    var afterSync: AfterSync?
    var maxDeleteFraction: DeleteFraction?
    var maxEntries: EntryBound?

    enum CodingKeys: String, CodingKey {
        case name, path, include, exclude, optional
        case followSymlinks = "follow_symlinks"
        case minAge = "min_age"
        case afterSync = "after_sync"
        case maxDeleteFraction = "max_delete_fraction"
        case maxEntries = "max_entries"
    }
}
