/// Keeps writes under a quota of `limit` requests in any sliding `window` (Google: 60 writes per minute per
/// user). ``acquire()`` waits until a write may go (a wait before sending, not a retry); ``release()`` is called
/// when its answer (or failure) came back.
///
/// A write counts against the window from the moment it is sent until `window` after its answer: the server
/// saw it somewhere in between, so however long the request took on the way, no `window` of the server's
/// clock can see more than `limit` of them.
actor WriteRateLimiter {
    let limit: Int
    let window: Duration
    private let clock = ContinuousClock()
    /// Writes sent and not answered yet.
    private(set) var inFlight = 0
    private var finished: [ContinuousClock.Instant] = []
    /// How many acquisitions had to wait (for tests and logs).
    private(set) var waits = 0

    init(limit: Int, window: Duration) {
        self.limit = max(1, limit)
        self.window = window
    }

    func acquire() async throws {
        var waited = false
        while true {
            let now = clock.now
            finished.removeAll { $0 <= now - window }
            if inFlight + finished.count < limit {
                inFlight += 1
                if waited { waits += 1 }
                return
            }
            waited = true
            // Wake when the oldest finished write leaves the window, or soon when only writes in flight fill it.
            // Other waiters may take the slot first; the loop checks again.
            let until = finished.first.map { $0 + window } ?? now + .milliseconds(20)
            try await Task.sleep(until: min(until, now + .milliseconds(250)), clock: clock)
        }
    }

    func release() {
        inFlight = max(0, inFlight - 1)
        finished.append(clock.now)
    }
}
