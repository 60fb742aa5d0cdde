/// How the local destination makes its copies durable (`fsync:`). In every mode a copy is written to a
/// temporary file and renamed into place, so a reader never sees half a file while syncgate runs or after it is
/// killed; the modes differ in what a power cut (or kernel crash) can do.
public enum LocalFsync: String, Sendable {
    /// `batch` (the default): copies are renamed into place as they finish; before the ledger records any of
    /// them synced, one `syncfs` flushes the destination's file system. A power cut can leave the last copies,
    /// not yet recorded synced, empty or short under their names; the next run sends them again.
    case batch
    /// `file` (or `true`): each copy is fsynced before its rename and its folder after it, so even a power cut
    /// never leaves a short file under a final name. Costs two synchronous writes per file.
    case file
    /// `false`: no flush at all; the ledger may record a copy synced that a power cut then loses.
    case off

    init?(configValue: String) {
        switch configValue.lowercased() {
        case "batch": self = .batch
        case "file", "true": self = .file
        case "false", "off": self = .off
        default: return nil
        }
    }
}
