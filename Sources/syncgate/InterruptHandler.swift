import Dispatch
import Foundation
import Logging
import SyncgateCore

/// Ctrl-C (SIGINT), SIGTERM and SIGHUP (a closed terminal, or a service manager's stop): the first stops new uploads (in-flight ones get a grace period) and the process
/// exits by ``exitDeadline`` after it whatever the destinations do; a second one exits at once. The ledger is
/// consistent at every step, so the next run resumes either way.
///
/// Unchecked: `sources` is set in `init` only, and `count` is touched only on the serial `queue`.
final class InterruptHandler: @unchecked Sendable {
    /// How long after the first signal the process is gone at the latest (the promise is 3 seconds; the rest is
    /// margin for the process to end).
    static let exitDeadline: Duration = .milliseconds(2750)
    /// How long uploads in flight may go on after the first signal (the rest of the deadline is for ending sessions
    /// and writing the ledger).
    static let uploadGrace: Duration = .seconds(2)

    let cancellation = CancellationHandle()
    private var sources: [DispatchSourceSignal] = []
    private var count = 0
    private let queue = DispatchQueue(label: "syncgate.signals")

    init(onFirst: @escaping @Sendable () -> Void) {
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { [weak self] in
                guard let self else { return }
                self.count += 1
                if self.count == 1 {
                    onFirst()
                    self.cancellation.cancel()
                    self.queue.asyncAfter(deadline: .now() + InterruptHandler.exitDeadline.seconds) {
                        Console.log(.warning, "a destination did not let go in time; stopping now (the next run resumes)")
                        _exit(130)
                    }
                } else {
                    Console.log(.warning, "interrupted again, stopping now")
                    _exit(130)
                }
            }
            source.resume()
            sources.append(source)
        }
    }

    /// Stops the run as the first signal would, without a signal (standard output's reader went away).
    func stopQuietly() {
        queue.async {
            guard self.count == 0 else { return }
            self.count = 1
            self.cancellation.cancel()
            self.queue.asyncAfter(deadline: .now() + InterruptHandler.exitDeadline.seconds) { _exit(141) }
        }
    }
}
