import Foundation

/// How the simulator behaves and which faults it injects. Fault counters are shared by all connections
/// and can be changed at run time through the control port.
final class SimulatorSettings: @unchecked Sendable {
    private let lock = NSLock()

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

    private var _delayMilliseconds: Int
    private var _genericErrors: Int
    private var _corruptPuts: Int
    private var _cutAfterBytes: Int
    private var _cutConnections: Int
    private var _forcedLevel: String?
    private var _puts = 0
    private var _putBytes: Int64 = 0
    private var _connections = 0
    private var _heartbeatACKs = 0

    init(
        protocolVersion: UInt8, mtu: Int, noACK: Bool, noUI: Bool, activateAfter: Double, activateAfterRefusal: Double,
        noneLimit: Int, heartbeatInterval: Double, delayMilliseconds: Int, genericErrors: Int, corruptPuts: Int,
        cutAfterBytes: Int, cutConnections: Int, refuseRegistration: String?, language: String = "EN-US", verbose: Bool
    ) {
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
        _delayMilliseconds = delayMilliseconds
        _genericErrors = genericErrors
        _corruptPuts = corruptPuts
        _cutAfterBytes = cutAfterBytes
        _cutConnections = cutConnections
    }

    var delayMilliseconds: Int {
        get { lock.withLock { _delayMilliseconds } }
        set { lock.withLock { _delayMilliseconds = newValue } }
    }

    func set(genericErrors: Int? = nil, corruptPuts: Int? = nil, cutAfterBytes: Int? = nil, cutConnections: Int? = nil) {
        lock.withLock {
            if let genericErrors { _genericErrors = genericErrors }
            if let corruptPuts { _corruptPuts = corruptPuts }
            if let cutAfterBytes { _cutAfterBytes = cutAfterBytes }
            if let cutConnections { _cutConnections = cutConnections }
        }
    }

    /// Whether this PutFile must be answered GENERIC_ERROR (counts one down).
    func takeGenericError() -> Bool {
        lock.withLock {
            guard _genericErrors > 0 else { return false }
            _genericErrors -= 1
            return true
        }
    }

    /// Whether this PutFile's data must be corrupted in transit (counts one down).
    func takeCorruption() -> Bool {
        lock.withLock {
            guard _corruptPuts > 0 else { return false }
            _corruptPuts -= 1
            return true
        }
    }

    /// For a new connection: after how many received bytes to cut it (nil: never).
    func takeCutBudget() -> Int? {
        lock.withLock {
            _connections += 1
            guard _cutAfterBytes > 0, _cutConnections > 0 else { return nil }
            _cutConnections -= 1
            return _cutAfterBytes
        }
    }

    var forcedLevel: String? {
        get { lock.withLock { _forcedLevel } }
        set { lock.withLock { _forcedLevel = newValue } }
    }

    func countPut(bytes: Int) {
        lock.withLock {
            _puts += 1
            _putBytes += Int64(bytes)
        }
    }

    func countHeartbeatACK() { lock.withLock { _heartbeatACKs += 1 } }

    var stats: String {
        lock.withLock {
            "connections=\(_connections) puts=\(_puts) put_bytes=\(_putBytes) heartbeat_acks=\(_heartbeatACKs)"
        }
    }
}
