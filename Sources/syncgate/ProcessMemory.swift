import CMalloc

/// How `syncgate run` keeps its memory flat over weeks of file events (docs/performance.md, "Gateway").
///
/// glibc gives each thread that allocates an arena of its own (up to eight per core), and memory freed in one is not
/// reused by another: a gateway's threads take turns at the work, and its resident memory crept up by a few MiB for
/// every quarter-million file events. With one arena it stays flat. That is set before any thread starts, which is
/// why it happens first in `main`; a `MALLOC_ARENA_MAX` in the environment is the user's choice and is left alone.
/// After a burst, ``trim()`` hands the pages freed back to the system.
enum ProcessMemory {
    /// Limits malloc to one arena when the command is `run` (a one-shot `sync` keeps glibc's defaults: it ends
    /// before memory can creep, and its uploads run on every core).
    static func prepare(arguments: [String]) {
        #if canImport(Glibc)
        guard getenv("MALLOC_ARENA_MAX") == nil, arguments.dropFirst().contains("run") else { return }
        _ = mallopt(M_ARENA_MAX, 1)
        #endif
    }

    /// Returns memory freed since the last trim to the system (a gateway calls it after its passes).
    static func trim() {
        #if canImport(Glibc)
        _ = malloc_trim(0)
        #endif
    }
}
