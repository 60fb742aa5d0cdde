#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `posix_spawn` file actions glibc has but Swift's Glibc module does not declare (they are GNU extensions),
/// found at run time: nil where the C library lacks them.
public enum SpawnFileActions {
    public typealias Actions = UnsafeMutablePointer<posix_spawn_file_actions_t>

    /// `posix_spawn_file_actions_addchdir_np` (glibc 2.29): the child starts in this folder.
    public static let addchdir: (@convention(c) (Actions, UnsafePointer<CChar>) -> Int32)? = symbol(
        "posix_spawn_file_actions_addchdir_np")

    /// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34): the child closes every descriptor from this one up,
    /// without the parent reading `/proc/self/fd`.
    public static let addclosefrom: (@convention(c) (Actions, Int32) -> Int32)? = symbol(
        "posix_spawn_file_actions_addclosefrom_np")

    private static func symbol<T>(_ name: String) -> T? {
        #if os(Linux)
        guard let found = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(found, to: T.self)
        #else
        return nil
        #endif
    }
}
