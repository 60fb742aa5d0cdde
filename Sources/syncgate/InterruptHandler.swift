import Dispatch
import Foundation
import SyncgateCore

/// Ctrl-C (SIGINT) and SIGTERM: the first stops new uploads (in-flight ones get a grace period); a second one exits
/// at once (the ledger is consistent at every step, so the next run resumes).
final class InterruptHandler: @unchecked Sendable {
    let cancellation = CancellationHandle()
    private var sources: [DispatchSourceSignal] = []
    private var count = 0
    private let queue = DispatchQueue(label: "syncgate.signals")

    init(onFirst: @escaping @Sendable () -> Void) {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { [weak self] in
                guard let self else { return }
                self.count += 1
                if self.count == 1 {
                    onFirst()
                    self.cancellation.cancel()
                } else {
                    FileHandle.standardError.write(Data("syncgate: interrupted again, stopping now\n".utf8))
                    exit(130)
                }
            }
            source.resume()
            sources.append(source)
        }
    }
}
