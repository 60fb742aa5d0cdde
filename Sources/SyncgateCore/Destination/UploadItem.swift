import Foundation

/// One file to deliver to one destination, as the engine planned it.
public struct UploadItem: Sendable, Hashable {
    /// The source's name from the config.
    public var source: String
    /// Path relative to the source folder, `/`-separated, never starting with `/` and without `..`.
    public var relativePath: String
    /// Absolute path of the file on disk (read it in chunks; never load it whole).
    public var absolutePath: String
    /// The name the destination stores it under (``Destination/remoteName(forRelativePath:)``).
    public var remoteName: String
    /// Size in bytes when planned.
    public var size: Int64
    /// Modification time when planned.
    public var modificationTime: Date
    /// Lower-case hex SHA-256 of the content when planned; empty for a new file sent to a destination that
    /// ``Destination/hashesWhileSending`` (it returns the hash in its receipt).
    public var sha256: String
    /// Whether the file matched the `artwork` globs (it then uses the artwork retry count).
    public var isArtwork: Bool
    /// `true` when an earlier attempt (in this run or a run that crashed) may have reached the destination without
    /// its outcome being recorded: a destination whose writes are not idempotent (appending rows) must check what
    /// it already holds before sending again; one with cheap checks may skip the upload.
    public var outcomeUnknown: Bool

    public init(
        source: String, relativePath: String, absolutePath: String, remoteName: String, size: Int64,
        modificationTime: Date, sha256: String, isArtwork: Bool, outcomeUnknown: Bool = false
    ) {
        self.source = source
        self.relativePath = relativePath
        self.absolutePath = absolutePath
        self.remoteName = remoteName
        self.size = size
        self.modificationTime = modificationTime
        self.sha256 = sha256
        self.isArtwork = isArtwork
        self.outcomeUnknown = outcomeUnknown
    }

    /// Identifies the file across destinations: its source and relative path.
    public var key: FileKey { FileKey(source: source, path: relativePath) }

    /// The file's extension, lower-cased, without the dot ("" when none).
    public var fileExtension: String {
        let name = relativePath.split(separator: "/").last.map(String.init) ?? relativePath
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return name[name.index(after: dot)...].lowercased()
    }
}
