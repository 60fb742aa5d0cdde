#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's limit on open descriptors (`RLIMIT_NOFILE`). `syncgate run` raises its soft limit to the hard one
/// (at most ``ceiling``) at start, so that the status server's connections (bounded by `http.max_connections`), the
/// sources' watches and files and the destinations' connections never compete for systemd's default 1,024.
enum DescriptorLimit {
    /// Raised no further: some code visits every possible descriptor (closing them before starting a plugin).
    static let ceiling: rlim_t = 65_536

    /// Raises the soft limit to the hard limit (capped at ``ceiling``); returns the soft limit in force after.
    @discardableResult
    static func raise() -> UInt64 {
        var limit = rlimit()
        guard getrlimit(resourceNoFile, &limit) == 0 else { return 0 }
        let target = min(limit.rlim_max, ceiling)
        if limit.rlim_cur < target {
            var raised = limit
            raised.rlim_cur = target
            if setrlimit(resourceNoFile, &raised) == 0 { limit = raised }
        }
        return UInt64(limit.rlim_cur)
    }

    #if canImport(Glibc)
    private static let resourceNoFile = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resourceNoFile = RLIMIT_NOFILE
    #endif
}
