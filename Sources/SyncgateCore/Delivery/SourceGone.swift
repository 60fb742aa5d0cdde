/// A file removed from its source between the walk that planned it and its upload (a producer that takes its files
/// back, a temporary file, a rotated log). Not a failure of the file or of the destination: the delivery layer
/// reports it as ``DeliveryEvent/Kind/gone``, and its row is left pending, the attempt not counted, with a note.
/// It is not marked removed here: that is the next walk's call, made after it has judged the whole source (a share
/// unmounted in the middle of a run looks like every file gone, and a mirror deletes the copies of what is marked).
///
/// Seen as the walk sees a removed file (``RemovalDetector``): `lstat` says the path does not exist while the
/// source's folder does. A source folder that is gone itself (a renamed folder) says nothing about its files: their
/// uploads fail as before.
public enum SourceGone {
    /// The code of the error an upload ends with when its file is gone (``DestinationError/code``).
    public static let code = "source-gone"
    /// What happened, as the logs, `sync --json` and `sync -v` say it.
    public static let reason = "removed from its source before it was sent"
    /// What the row's last error says until the next walk.
    static let note = reason + "; the next run records it gone"

    /// Whether the planned file is gone from its still-present source folder (the walk's own test).
    public static func isGone(_ item: UploadItem) -> Bool {
        guard item.absolutePath.hasSuffix("/" + item.relativePath) else { return false }
        let root = String(item.absolutePath.dropLast(item.relativePath.utf8.count + 1))
        return RemovalDetector.isMissing(item.absolutePath) && RemovalDetector.isFolder(root.isEmpty ? "/" : root)
    }

    /// The error an attempt ends with instead of its own, when ``isGone(_:)``: permanent (nothing to retry), the file's.
    static func error(_ item: UploadItem) -> DestinationError {
        .permanent("\(item.relativePath) was \(reason)", code: code)
    }
}
