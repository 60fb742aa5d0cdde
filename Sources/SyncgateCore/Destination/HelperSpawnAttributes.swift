#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `posix_spawn` attributes of a helper program syncgate starts (an external plugin, a `credential_process`):
/// a process group of its own, so that it and whatever it starts can be signalled together; no blocked signals; and
/// the default action for the signals syncgate handles or ignores itself (SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT,
/// SIGCHLD), whatever the calling thread had.
public final class HelperSpawnAttributes {
    /// Pass `&attributes.raw` to `posix_spawn`.
    public var raw = posix_spawnattr_t()

    public init() {
        posix_spawnattr_init(&raw)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&raw, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&raw, &defaults)
        posix_spawnattr_setpgroup(&raw, 0)
        posix_spawnattr_setflags(&raw, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
    }

    deinit {
        posix_spawnattr_destroy(&raw)
    }
}
