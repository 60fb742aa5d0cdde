#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A folder of the local destination held open: the descriptor every name in it is created, renamed and deleted
/// relative to (`openat`, `renameat`, `unlinkat`), so that no later look-up walks its path again. Closed when the
/// last user lets it go (``LocalTree`` may drop it from its cache while an upload still writes there).
final class LocalFolder: Sendable {
    let descriptor: Int32
    /// Its path relative to the destination folder ("" for the destination folder itself).
    let path: String

    init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    var isRoot: Bool { path.isEmpty }

    /// Where a failure to create a new name in this folder happened (see ``LocalErrno/Place``).
    var creationPlace: LocalErrno.Place { isRoot ? .inRoot : .file }

    /// `name` joined to this folder's path.
    func child(_ name: String) -> String { isRoot ? name : path + "/" + name }

    /// One name in a folder and its `d_type` (`DT_UNKNOWN` when the file system does not say).
    struct Entry {
        var name: String
        var type: UInt8
    }

    /// A folder that could not be read: the `errno`.
    struct ReadError: Error {
        var code: Int32
    }

    /// The names in this folder ("." and ".." left out), read through a descriptor of their own (so that two
    /// readers never share a position).
    func entries() throws(ReadError) -> [Entry] {
        let fd = openat(descriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw ReadError(code: errno) }
        guard let stream = fdopendir(fd) else {
            let code = errno
            close(fd)
            throw ReadError(code: code)
        }
        defer { closedir(stream) }
        var entries: [Entry] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw ReadError(code: errno) }
                return entries
            }
            let name = withUnsafePointer(to: &entry.pointee.d_name) { field in
                field.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: field.pointee)) { String(cString: $0) }
            }
            if name == "." || name == ".." { continue }
            entries.append(Entry(name: name, type: entry.pointee.d_type))
        }
    }
}
