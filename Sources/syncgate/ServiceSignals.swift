import Dispatch
import Foundation
import Logging

/// The signals of `syncgate run`: SIGTERM or SIGINT drains the gateway (no new work; uploads in flight get their
/// grace period) and the process is gone ``drainDeadline`` later at the latest, exiting 0; a second one exits at
/// once. SIGHUP asks for the config to be read again.
///
/// Unchecked: `sources` is set in `init` only, and `stops` is touched only by the signal handlers, on the serial `queue`.
final class ServiceSignals: @unchecked Sendable {
    /// How long after SIGTERM the process is gone at the latest.
    static let drainDeadline: Duration = .seconds(5)

    private var sources: [DispatchSourceSignal] = []
    private let queue = DispatchQueue(label: "syncgate.service-signals")
    private var stops = 0

    init(onStop: @escaping @Sendable () -> Void, onReload: @escaping @Sendable () -> Void) {
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { [weak self] in
                guard let self else { return }
                if sig == SIGHUP {
                    onReload()
                    return
                }
                self.stops += 1
                if self.stops == 1 {
                    onStop()
                    self.queue.asyncAfter(deadline: .now() + ServiceSignals.drainDeadline.seconds) {
                        Console.log(.warning, "uploads in flight did not end in time; stopping now (the next start resumes)")
                        _exit(0)
                    }
                } else {
                    Console.log(.warning, "stopping now")
                    _exit(0)
                }
            }
            source.resume()
            sources.append(source)
        }
    }
}
