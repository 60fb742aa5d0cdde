#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The `process_*` series every Prometheus client library exports, read from `/proc` at scrape time (Linux; none
/// elsewhere): CPU time, resident and virtual memory, open and allowed descriptors, and the start time.
struct ProcessMetrics: Sendable, Equatable {
    var cpuSeconds: Double
    var residentBytes: Int64
    var virtualBytes: Int64
    var openDescriptors: Int
    var maxDescriptors: Int?
    var startTime: Double

    /// The series as gauges and a counter: name, help, value, and whether it is a counter.
    var series: [(name: String, help: String, value: Double, counter: Bool)] {
        var all: [(String, String, Double, Bool)] = [
            ("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", cpuSeconds, true),
            ("process_resident_memory_bytes", "Resident memory size in bytes.", Double(residentBytes), false),
            ("process_virtual_memory_bytes", "Virtual memory size in bytes.", Double(virtualBytes), false),
            ("process_open_fds", "Number of open file descriptors.", Double(openDescriptors), false),
            ("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", startTime, false),
        ]
        if let maxDescriptors { all.append(("process_max_fds", "Maximum number of open file descriptors.", Double(maxDescriptors), false)) }
        return all
    }

    /// This process's figures now; nil where `/proc` cannot be read.
    static func current() -> ProcessMetrics? {
        #if os(Linux)
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8) else { return nil }
        // The command name (field 2) is in parentheses and may hold spaces: the fields that count follow its ')'.
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After ')': state is fields[0], so field N of proc(5) is fields[N - 3].
        func field(_ n: Int) -> Double? { fields.count > n - 3 ? Double(fields[n - 3]) : nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let page = Double(sysconf(Int32(_SC_PAGESIZE)))
        guard ticks > 0, let utime = field(14), let stime = field(15), let start = field(22), let vsize = field(23), let rss = field(24)
        else { return nil }
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count).map { max($0 - 1, 0) } ?? 0
        var limit = rlimit()
        // (RLIM_INFINITY is all bits set.)
        let maxDescriptors = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 && limit.rlim_cur < rlim_t(Int.max) ? Int(limit.rlim_cur) : nil
        return ProcessMetrics(
            cpuSeconds: (utime + stime) / ticks, residentBytes: Int64(rss * page), virtualBytes: Int64(vsize),
            openDescriptors: descriptors, maxDescriptors: maxDescriptors,
            startTime: bootTime().map { $0 + start / ticks } ?? fallbackStart.timeIntervalSince1970)
        #else
        return nil
        #endif
    }

    /// The start time where `/proc/stat` cannot be read (systemd's `ProcSubset=pid`): when this was first asked
    /// for, which ``StatusServer`` does as it is made, a moment after the process started.
    static let fallbackStart = Date()

    /// When the machine booted (`btime` of `/proc/stat`), in seconds since the epoch.
    private static func bootTime() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}
