import Dispatch

/// A task executor of the status server's own (SE-0417): one serial dispatch queue. The server's tasks (its accept
/// loop, each connection's requests) prefer it, so that `/healthz` and the other answers do not wait behind the
/// gateway's own work on the cooperative pool (a pass delivering 200 files on a loaded machine held them for up to
/// 2.6 s; with this, under 1 s). What blocks stays off it: ledger reads (``Blocking``), retry and forget (detached
/// tasks), and the event broadcast's tasks (unstructured tasks do not inherit the preference).
@available(macOS 15, *)
final class ServerExecutor: TaskExecutor, Sendable {
    private let queue = DispatchQueue(label: "syncgate.http", qos: .userInitiated)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
