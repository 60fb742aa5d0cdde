import Foundation
import SyncgateCore

/// The terminal progress line: files done, bytes, rate, ETA (standard error, redrawn in place).
final class ProgressLine: @unchecked Sendable {
    private let lock = NSLock()
    private var totalFiles = 0
    private var doneFiles = 0
    private var failedFiles = 0
    private var waitingFiles = 0
    private var totalBytes: Int64 = 0
    private var doneBytes: Int64 = 0
    private var perFile: [String: Int64] = [:]
    private let started = Date()
    private var lastDraw = Date.distantPast

    func handle(_ event: DeliveryEvent) {
        lock.withLock {
            let key = event.destination + "\u{0}" + event.file.source + "\u{0}" + event.file.path
            switch event.kind {
            case .queued:
                totalFiles += 1
                totalBytes += event.size
            case .progress(let bytes):
                doneBytes += bytes - (perFile[key] ?? 0)
                perFile[key] = bytes
            case .started:
                doneBytes -= perFile[key] ?? 0
                perFile[key] = 0
            case .synced:
                doneBytes += event.size - (perFile[key] ?? 0)
                perFile[key] = nil  // settled: only files in flight are kept
                doneFiles += 1
            case .failed:
                failedFiles += 1
                doneBytes -= perFile[key] ?? 0
                perFile[key] = nil
            case .waiting:
                waitingFiles += 1
                doneBytes -= perFile[key] ?? 0
                perFile[key] = nil
            default: break
            }
            let now = Date()
            if now.timeIntervalSince(lastDraw) >= 0.2 {
                lastDraw = now
                draw(now)
            }
        }
    }

    private func draw(_ now: Date) {
        let elapsed = max(now.timeIntervalSince(started), 0.001)
        let rate = Double(doneBytes) / elapsed
        let remaining = rate > 0 ? Double(max(totalBytes - doneBytes, 0)) / rate : 0
        var line = "\r\u{1B}[2K\(doneFiles)/\(totalFiles) files"
        if failedFiles > 0 { line += ", \(failedFiles) failed" }
        if waitingFiles > 0 { line += ", \(waitingFiles) waiting" }
        line += ", \(ByteSize.format(doneBytes)) of \(ByteSize.format(totalBytes)), \(ByteSize.format(Int64(rate)))/s"
        if doneFiles + failedFiles + waitingFiles < totalFiles, rate > 0 { line += ", ETA \(Int(remaining.rounded()))s" }
        Console.errorRaw(line)
    }

    func finish() {
        lock.withLock {
            draw(Date())
            Console.errorRaw("\n")
        }
    }
}
