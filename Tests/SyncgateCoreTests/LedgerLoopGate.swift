import Synchronization

/// Keeps the test that freezes the PostgreSQL ledger's event loop (``LedgerWakeTests``) apart from every other test
/// of this process with a PostgreSQL ledger: that loop is the process's one for all of them, and a ledger frozen by
/// another test for seconds breaks tests whose leases are a second long. Tests on PostgreSQL share the gate
/// (``LedgerEngine/withStates(_:_:)``); the freezing test holds it alone, and while it waits no new one enters.
final class LedgerLoopGate: Sendable {
    static let shared = LedgerLoopGate()

    private struct State {
        var holders = 0
        var exclusive = false
        var exclusiveWaiting = 0
    }

    private let state = Mutex(State())

    func enterShared() async {
        while !state.withLock({ state in
            guard !state.exclusive, state.exclusiveWaiting == 0 else { return false }
            state.holders += 1
            return true
        }) {
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    func leaveShared() {
        state.withLock { $0.holders -= 1 }
    }

    func enterExclusive() async {
        state.withLock { $0.exclusiveWaiting += 1 }
        while !state.withLock({ state in
            guard !state.exclusive, state.holders == 0 else { return false }
            state.exclusiveWaiting -= 1
            state.exclusive = true
            return true
        }) {
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    func leaveExclusive() {
        state.withLock { $0.exclusive = false }
    }
}
