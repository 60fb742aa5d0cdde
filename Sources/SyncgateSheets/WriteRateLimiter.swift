/// Keeps writes under a quota of `limit` requests in any sliding `window` (Google: 60 writes per minute per
/// user). ``acquire()`` waits until a write may go: a wait before sending, not a retry. Cancellation ends the wait.
actor WriteRateLimiter {
    let limit: Int
    let window: Duration
    private let clock = ContinuousClock()
    private var sent: [ContinuousClock.Instant] = []
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
            sent.removeAll { $0 <= now - window }
            if sent.count < limit {
                sent.append(now)
                if waited { waits += 1 }
                return
            }
            waited = true
            // Wake when the oldest write leaves the window; other waiters may take the slot first, so re-check.
            let until = sent[0] + window
            try await Task.sleep(until: until, clock: clock)
        }
    }
}
