import Foundation
import SyncgateCore
import Synchronization

/// The terminal progress line: files done, the share of the bytes done, bytes, rate, ETA in hours, minutes and
/// seconds (standard error, redrawn in place): `12/40 files, 31%, 1.2 MiB of 3.9 MiB, 410 KiB/s, ETA 6s`.
final class ProgressLine: Sendable {
    /// The counts; also held while the line is drawn, so that lines are drawn whole and in order.
    private let state = Mutex(Counts())
    private let started = Date()

    private struct Counts {
        var totalFiles = 0
        var doneFiles = 0
        var failedFiles = 0
        var waitingFiles = 0
        var totalBytes: Int64 = 0
        var doneBytes: Int64 = 0
        var perFile: [String: Int64] = [:]
        var lastDraw = Date.distantPast
    }

    func handle(_ event: DeliveryEvent) {
        let started = started
        state.withLock { counts in
            let key = event.destination + "\u{0}" + event.file.source + "\u{0}" + event.file.path
            switch event.kind {
            case .queued:
                counts.totalFiles += 1
                counts.totalBytes += event.size
            case .progress(let bytes):
                counts.doneBytes += bytes - (counts.perFile[key] ?? 0)
                counts.perFile[key] = bytes
            case .started:
                counts.doneBytes -= counts.perFile[key] ?? 0
                counts.perFile[key] = 0
            case .synced:
                counts.doneBytes += event.size - (counts.perFile[key] ?? 0)
                counts.perFile[key] = nil  // settled: only files in flight are kept
                counts.doneFiles += 1
            case .failed:
                counts.failedFiles += 1
                counts.doneBytes -= counts.perFile[key] ?? 0
                counts.perFile[key] = nil
            case .waiting:
                counts.waitingFiles += 1
                counts.doneBytes -= counts.perFile[key] ?? 0
                counts.perFile[key] = nil
            case .gone:
                counts.doneBytes -= counts.perFile[key] ?? 0
                counts.perFile[key] = nil
            default: break
            }
            let now = Date()
            if now.timeIntervalSince(counts.lastDraw) >= 0.2 {
                counts.lastDraw = now
                ProgressLine.draw(counts, started: started, now: now)
            }
        }
    }

    private static func draw(_ counts: Counts, started: Date, now: Date) {
        let elapsed = max(now.timeIntervalSince(started), 0.001)
        let rate = Double(counts.doneBytes) / elapsed
        let remaining = rate > 0 ? Double(max(counts.totalBytes - counts.doneBytes, 0)) / rate : 0
        var line = "\r\u{1B}[2K\(counts.doneFiles)/\(counts.totalFiles) files"
        if counts.failedFiles > 0 { line += ", \(counts.failedFiles) failed" }
        if counts.waitingFiles > 0 { line += ", \(counts.waitingFiles) waiting" }
        if counts.totalBytes > 0 {
            let percent = min(100, Int(Double(max(counts.doneBytes, 0)) * 100 / Double(counts.totalBytes)))
            line += ", \(percent)%"
        }
        line += ", \(ByteSize.format(counts.doneBytes)) of \(ByteSize.format(counts.totalBytes)), \(ByteSize.format(Int64(rate)))/s"
        if counts.doneFiles + counts.failedFiles + counts.waitingFiles < counts.totalFiles, rate > 0 { line += ", ETA \(HumanTime.remaining(remaining))" }
        Console.errorRaw(line)
    }

    func finish() {
        let started = started
        state.withLock { counts in
            ProgressLine.draw(counts, started: started, now: Date())
            Console.errorRaw("\n")
        }
    }
}
