#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SyncgateCore

/// How the local destination classifies a failed system call: its class (retry it or not) and its scope (this file,
/// or the whole destination), decided by the `errno` and by where it happened. docs/local.md's "Errors and what
/// happens next" is this table in words.
public enum LocalErrno {
    /// Where a system call failed.
    public enum Place: Sendable, Hashable {
        /// Opening or creating the destination folder itself (its `path`, links in it followed).
        case root
        /// Creating a new name directly in the destination folder (a first-level folder, a temporary file there):
        /// what fails there for want of permission fails for every file.
        case inRoot
        /// One file's own path: opening or creating a folder below the first level, opening an existing folder,
        /// writing, renaming or deleting the file.
        case file
    }

    /// The class and scope of `code` at `place`. `rootAnswers` says whether the destination folder still answers (a
    /// fresh look-up finds the same folder and its file system replies): an I/O error or a folder gone, while the
    /// root does not answer, is the destination's, not the file's.
    public static func classification(of code: Int32, at place: Place, rootAnswers: Bool = true) -> Classification {
        let unavailable = Classification(.retryable(), scope: .destination)
        let blocked = Classification(.permanent, scope: .destination)
        switch code {
        // The file system is full, or gone: nothing can be written there until it has room or is back.
        case ENOSPC, EDQUOT, ENODEV, ENXIO, ESTALE, ENOTCONN, noMedium, EHOSTDOWN, ESHUTDOWN:
            return unavailable
        // Mounted read-only: waits for the settings to change (another path) or `syncgate retry` once it is writable.
        case EROFS:
            return blocked
        case EIO:
            return place == .root || !rootAnswers ? unavailable : Classification(.retryable())
        case ENOENT:
            // Below a folder held open: that folder was removed while syncgate wrote there.
            if place == .root || !rootAnswers { return unavailable }
            return Classification(.retryable())
        case EACCES, EPERM:
            // The destination folder itself cannot be made, opened or written to: a setting to fix.
            return place == .file ? Classification(.permanent) : blocked
        case ENOTDIR, ELOOP, ENAMETOOLONG, EEXIST, EISDIR, EINVAL, EILSEQ, EFBIG, EMLINK:
            // At the root: `path` names a file, a loop of links, a name too long. Below: this file's own path.
            return place == .root ? blocked : Classification(.permanent)
        // This process is short of something for a moment; another attempt may pass.
        case EAGAIN, EINTR, EBUSY, ETXTBSY, EMFILE, ENFILE, ENOMEM, ENOBUFS:
            return Classification(.retryable())
        default:
            // Unknown: a root that cannot be opened for an unknown reason is tried again next run; a file fails.
            return place == .root ? unavailable : Classification(.permanent)
        }
    }

    /// The error for `code` (usually `errno`), its message "`what`: strerror", its code the errno's name.
    public static func error(_ code: Int32, _ what: String, at place: Place, rootAnswers: Bool = true) -> DestinationError {
        DestinationError(classification(of: code, at: place, rootAnswers: rootAnswers), code: name(of: code),
                         "\(what): \(String(cString: strerror(code)))")
    }

    /// The symbolic name of an errno value ("ENOSPC"), or "errno-N" for one not listed here.
    public static func name(of code: Int32) -> String {
        names[code] ?? "errno-\(code)"
    }

    /// Linux's ENOMEDIUM (no disk in the drive); a value no call returns elsewhere.
    static let noMedium: Int32 = {
        #if os(Linux)
        return ENOMEDIUM
        #else
        return -1
        #endif
    }()

    static let names: [Int32: String] = [
        EPERM: "EPERM", ENOENT: "ENOENT", EINTR: "EINTR", EIO: "EIO", ENXIO: "ENXIO", EAGAIN: "EAGAIN", ENOMEM: "ENOMEM",
        EACCES: "EACCES", EBUSY: "EBUSY", EEXIST: "EEXIST", ENODEV: "ENODEV", ENOTDIR: "ENOTDIR", EISDIR: "EISDIR",
        EINVAL: "EINVAL", ENFILE: "ENFILE", EMFILE: "EMFILE", ETXTBSY: "ETXTBSY", EFBIG: "EFBIG", ENOSPC: "ENOSPC",
        EROFS: "EROFS", EMLINK: "EMLINK", ENAMETOOLONG: "ENAMETOOLONG", ELOOP: "ELOOP", EILSEQ: "EILSEQ",
        ENOBUFS: "ENOBUFS", ENOTCONN: "ENOTCONN", ESHUTDOWN: "ESHUTDOWN", EHOSTDOWN: "EHOSTDOWN", ESTALE: "ESTALE",
        EDQUOT: "EDQUOT", noMedium: "ENOMEDIUM",
    ]
}
