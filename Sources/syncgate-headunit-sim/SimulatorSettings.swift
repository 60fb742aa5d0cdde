import Synchronization

/// How the simulator behaves and which faults it injects. Fault counters are shared by all connections
/// and can be changed at run time through the control port.
final class SimulatorSettings: Sendable {

    let protocolVersion: UInt8
    let mtu: Int
    let noACK: Bool
    let noUI: Bool
    let activateAfter: Double
    let activateAfterRefusal: Double
    let noneLimit: Int
    let heartbeatInterval: Double
    /// The result code every RegisterAppInterface gets instead of SUCCESS (nil: register).
    let refuseRegistration: String?
    /// The head unit's language and HMI display language (`--language`).
    let language: String
    let verbose: Bool
    /// Seconds the head unit stays after the first app registers, then it goes away (0: it stays).
    let acceptFor: Double

    /// What the control port changes and the connections count.
    private struct Counters {
        var delayMilliseconds: Int
        var genericErrors: Int
        var corruptPuts: Int
        var cutAfterBytes: Int
        var cutConnections: Int
        var forcedLevel: String?
        var puts = 0
        var putBytes: Int64 = 0
        var connections = 0
        var heartbeatACKs = 0
        var windowOpened = false
    }

    private let counters: Mutex<Counters>

    init(
        protocolVersion: UInt8, mtu: Int, noACK: Bool, noUI: Bool, activateAfter: Double, activateAfterRefusal: Double,
        noneLimit: Int, heartbeatInterval: Double, delayMilliseconds: Int, genericErrors: Int, corruptPuts: Int,
        cutAfterBytes: Int, cutConnections: Int, refuseRegistration: String?, language: String = "EN-US", acceptFor: Double = 0,
        verbose: Bool
    ) {
        self.acceptFor = acceptFor
        self.language = language
        self.protocolVersion = protocolVersion
        self.mtu = mtu
        self.noACK = noACK
        self.noUI = noUI
        self.activateAfter = activateAfter
        self.activateAfterRefusal = activateAfterRefusal
        self.noneLimit = noneLimit
        self.heartbeatInterval = heartbeatInterval
        self.refuseRegistration = refuseRegistration
        self.verbose = verbose
        counters = Mutex(Counters(delayMilliseconds: delayMilliseconds, genericErrors: genericErrors, corruptPuts: corruptPuts,
                                  cutAfterBytes: cutAfterBytes, cutConnections: cutConnections))
    }

    var delayMilliseconds: Int {
        get { counters.withLock { $0.delayMilliseconds } }
        set { counters.withLock { $0.delayMilliseconds = newValue } }
    }

    func set(genericErrors: Int? = nil, corruptPuts: Int? = nil, cutAfterBytes: Int? = nil, cutConnections: Int? = nil) {
        counters.withLock { counters in
            if let genericErrors { counters.genericErrors = genericErrors }
            if let corruptPuts { counters.corruptPuts = corruptPuts }
            if let cutAfterBytes { counters.cutAfterBytes = cutAfterBytes }
            if let cutConnections { counters.cutConnections = cutConnections }
        }
    }

    /// Whether this PutFile must be answered GENERIC_ERROR (counts one down).
    func takeGenericError() -> Bool {
        counters.withLock { counters in
            guard counters.genericErrors > 0 else { return false }
            counters.genericErrors -= 1
            return true
        }
    }

    /// Whether this PutFile's data must be corrupted in transit (counts one down).
    func takeCorruption() -> Bool {
        counters.withLock { counters in
            guard counters.corruptPuts > 0 else { return false }
            counters.corruptPuts -= 1
            return true
        }
    }

    /// For a new connection: after how many received bytes to cut it (nil: never).
    func takeCutBudget() -> Int? {
        counters.withLock { counters in
            counters.connections += 1
            guard counters.cutAfterBytes > 0, counters.cutConnections > 0 else { return nil }
            counters.cutConnections -= 1
            return counters.cutAfterBytes
        }
    }

    var forcedLevel: String? {
        get { counters.withLock { $0.forcedLevel } }
        set { counters.withLock { $0.forcedLevel = newValue } }
    }

    func countPut(bytes: Int) {
        counters.withLock { counters in
            counters.puts += 1
            counters.putBytes += Int64(bytes)
        }
    }

    /// Whether the `--accept-for` window starts now (true once: at the first registration).
    func openWindow() -> Bool {
        guard acceptFor > 0 else { return false }
        return counters.withLock { counters in
            defer { counters.windowOpened = true }
            return !counters.windowOpened
        }
    }

    func countHeartbeatACK() { counters.withLock { $0.heartbeatACKs += 1 } }

    var stats: String {
        counters.withLock { counters in
            "connections=\(counters.connections) puts=\(counters.puts) put_bytes=\(counters.putBytes) heartbeat_acks=\(counters.heartbeatACKs)"
        }
    }
}
