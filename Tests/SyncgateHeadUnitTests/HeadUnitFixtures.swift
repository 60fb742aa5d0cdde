import Foundation
import SyncgateCore
import SyncgateHeadUnit
import SyncgateTestSupport

/// Files and destinations for the tests that drive ``HeadUnitDestination`` against the simulator.
struct HeadUnitFixtures {
    let folder: TemporaryDirectory

    init() throws { folder = try TemporaryDirectory("headunit-src") }

    func remove() { folder.remove() }

    /// Deterministic pseudo-random bytes.
    static func bytes(_ count: Int, seed: UInt64) -> Data {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var out = [UInt8](repeating: 0, count: count)
        for i in 0..<count {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            out[i] = UInt8(truncatingIfNeeded: state)
        }
        return Data(out)
    }

    /// Writes a file and returns the upload item for it.
    func item(_ relativePath: String, _ data: Data, artwork: Bool = false) throws -> UploadItem {
        let url = try folder.write(relativePath, data)
        return UploadItem(
            source: "src", relativePath: relativePath, absolutePath: url.path,
            remoteName: try RemoteNameMapper.remoteName(for: relativePath), size: Int64(data.count),
            modificationTime: Date(), sha256: String(repeating: "0", count: 64), isArtwork: artwork)
    }

    /// Timeouts by default far above what a quiet machine needs (a set-up takes milliseconds): with 5 s, a session
    /// set-up timed out once beside `stress-ng --cpu 4`. Tests of the timeouts themselves give their own.
    static func destination(
        _ sim: HeadUnitSimulatorProcess, responseTimeout: Duration = .seconds(20), persistent: Bool = true, icon: String? = nil
    ) -> HeadUnitDestination {
        destination(port: sim.port, responseTimeout: responseTimeout, persistent: persistent, icon: icon)
    }

    /// A destination for whatever listens (or not) on a loopback port.
    static func destination(
        port: Int, connectTimeout: Duration = .seconds(5), responseTimeout: Duration = .seconds(20), persistent: Bool = true,
        icon: String? = nil
    ) -> HeadUnitDestination {
        HeadUnitDestination(
            config: HeadUnitConfig(
                port: port, app: .init(name: "Build Tracker", id: "584421907"), persistent: persistent, icon: icon,
                connectTimeout: ConfigDuration(connectTimeout), responseTimeout: ConfigDuration(responseTimeout)))
    }

    /// Runs `body` and returns what it threw (nil when it returned) and how long it took.
    static func outcome(_ body: () async throws -> Void) async -> (error: (any Error)?, elapsed: Duration) {
        let started = ContinuousClock.now
        do {
            try await body()
            return (nil, ContinuousClock.now - started)
        } catch {
            return (error, ContinuousClock.now - started)
        }
    }
}
