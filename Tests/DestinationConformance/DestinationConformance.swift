import Foundation
import SyncgateCore
import SyncgateTestSupport

/// One conformance suite that every destination plugin runs (as rclone's `fstests` does for its backends): the
/// behaviour the delivery layer and the engine rely on, tried through the plugin's own `Destination` against its
/// real (or loopback test) server. Each plugin's tests describe it with a ``Harness`` and expect ``run(_:)`` to
/// report no problem.
///
/// It tries: awkward names delivered with the right bytes and the name the plugin said; byte progress that never
/// goes back nor past the size; the listing and deletion (where the plugin has them); an existing copy recognised
/// and a different one not; a file changed while it is sent never recorded as delivered; cancellation ending an
/// upload promptly; the probe passing against a working destination; and the scope of its errors: a destination
/// that cannot be reached is the destination's problem (unavailable, not a failure of each file), and so is one
/// that refuses its credentials (blocked), where the harness can set that up.
public enum DestinationConformance {
    /// What the suite needs to know of a plugin.
    public struct Harness: Sendable {
        /// A name for messages.
        public var name: String
        /// A destination that works (a fresh one each call; the suite calls `finish()` on it).
        public var working: @Sendable () async throws -> any Destination
        /// The same destination pointed at an address where nothing listens (nil for one with no network).
        public var unreachable: (@Sendable () async throws -> any Destination)?
        /// The same destination with its credentials (or its configuration) refused.
        public var refused: (@Sendable () async throws -> any Destination)?
        /// Reads back what the destination holds under a remote name (nil: not there); nil when it cannot.
        public var readBack: (@Sendable (String) async throws -> Data?)?
        /// Whether `delete(remoteName:)` removes a file (false for append-only destinations).
        public var deletes: Bool
        /// Whether `list()` names the files uploaded (false when it lists something else, such as row ids).
        public var listsUploads: Bool
        /// Whether `existingCopy(of:)` is meant to find copies this plugin uploaded.
        public var findsExistingCopies: Bool
        /// Relative paths the suite sends: awkward, but valid for this destination.
        public var paths: [String]
        /// The content of the file at a path (a destination that reads records needs valid ones).
        public var content: @Sendable (String, Int) -> Data

        public init(
            name: String, working: @escaping @Sendable () async throws -> any Destination,
            unreachable: (@Sendable () async throws -> any Destination)?,
            refused: (@Sendable () async throws -> any Destination)? = nil,
            readBack: (@Sendable (String) async throws -> Data?)? = nil, deletes: Bool = true, listsUploads: Bool = true,
            findsExistingCopies: Bool = false,
            paths: [String] = DestinationConformance.awkwardPaths,
            content: @escaping @Sendable (String, Int) -> Data = DestinationConformance.bytes
        ) {
            self.name = name
            self.working = working
            self.unreachable = unreachable
            self.refused = refused
            self.readBack = readBack
            self.deletes = deletes
            self.listsUploads = listsUploads
            self.findsExistingCopies = findsExistingCopies
            self.paths = paths
            self.content = content
        }
    }

    /// Names most destinations must carry: spaces, quotes, non-ASCII in both normal forms, folders.
    public static let awkwardPaths = [
        "plain.txt", "with space.txt", "quote'and\"double.txt", "caf\u{E9}-nfc.txt", "cafe\u{301}-nfd.txt",
        "deep/er/folder/file.bin", "semi;colon&amp.txt", "\u{65E5}\u{672C}\u{8A9E}/\u{1F600}.dat",
    ]

    /// Deterministic bytes for a path: `index` makes each file's content differ.
    public static let bytes: @Sendable (String, Int) -> Data = { path, index in
        // FNV-1a of the path seeds a linear congruential sequence.
        var state = path.utf8.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 } &+ UInt64(index)
        return Data((0..<(2_000 + index * 997)).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        })
    }

    /// Runs the suite; returns what went wrong (empty when the plugin conforms).
    public static func run(_ harness: Harness) async -> [String] {
        var problems: [String] = []
        func note(_ text: String) { problems.append("\(harness.name): \(text)") }
        let folder: TemporaryDirectory
        do {
            folder = try TemporaryDirectory("sg-conformance")
        } catch {
            return ["\(harness.name): cannot make a folder: \(error)"]
        }
        defer { folder.remove() }

        // 1. Uploads: the right name, the right bytes, sane progress.
        var items: [UploadItem] = []
        do {
            let destination = try await harness.working()
            for (index, path) in harness.paths.enumerated() {
                let item = try makeItem(folder, path, harness.content(path, index), destination: destination)
                items.append(item)
                let progress = ProgressLog()
                do {
                    let receipt = try await destination.upload(item) { progress.add($0) }
                    if receipt.remoteName != item.remoteName {
                        note("\(path): the receipt names '\(receipt.remoteName)', remoteName(forRelativePath:) said '\(item.remoteName)'")
                    }
                    if let problem = progress.problem(size: item.size) { note("\(path): progress \(problem)") }
                    if let readBack = harness.readBack {
                        let stored = try await readBack(item.remoteName)
                        if stored != harness.content(path, index) {
                            note("\(path): the destination holds \(stored.map { "\($0.count) other bytes" } ?? "nothing") under '\(item.remoteName)'")
                        }
                    }
                } catch {
                    note("\(path): upload failed: \(DeliveryLayer.describe(error))")
                }
            }
            // Names: distinct paths get distinct names where the plugin says so, and the same path the same name.
            if destination.remoteNamesAreDistinct, Set(items.map(\.remoteName)).count != items.count {
                note("remoteNamesAreDistinct, yet \(items.count) paths gave \(Set(items.map(\.remoteName)).count) names")
            }
            for item in items where (try? destination.remoteName(forRelativePath: item.relativePath)) != item.remoteName {
                note("\(item.relativePath): remoteName(forRelativePath:) is not deterministic")
            }

            // 2. Listing and existing copies.
            if harness.listsUploads {
                do {
                    let names = try await destination.list().names
                    let missing = items.map(\.remoteName).filter { !names.contains($0) }
                    if !missing.isEmpty { note("list() lacks uploaded names: \(missing)") }
                } catch {
                    note("list() failed: \(DeliveryLayer.describe(error))")
                }
            }
            if harness.findsExistingCopies, let first = items.first {
                var known = first
                known.outcomeUnknown = true
                if (try? await destination.existingCopy(of: known)) == nil {
                    note("existingCopy(of:) did not recognise \(first.relativePath), which it holds")
                }
                // The same name with other bytes of the same size is not a copy.
                let other = try makeItem(folder, "other-" + (first.relativePath.split(separator: "/").last.map(String.init) ?? "x"),
                                         Data(repeating: 0x5A, count: Int(first.size)), destination: destination)
                var impostor = other
                impostor.remoteName = first.remoteName
                impostor.outcomeUnknown = true
                if (try? await destination.existingCopy(of: impostor)) != nil {
                    note("existingCopy(of:) took different bytes under '\(first.remoteName)' for a copy")
                }
            }

            // 3. Deletion.
            if harness.deletes, let last = items.last {
                do {
                    try await destination.delete(remoteName: last.remoteName)
                    if harness.listsUploads, try await destination.list().names.contains(last.remoteName) {
                        note("'\(last.remoteName)' is still listed after delete")
                    }
                    if let readBack = harness.readBack, try await readBack(last.remoteName) != nil {
                        note("'\(last.remoteName)' can still be read after delete")
                    }
                } catch {
                    note("delete(remoteName:) failed: \(DeliveryLayer.describe(error))")
                }
            }

            // 4. The probe passes against a working destination.
            do {
                try await destination.probe()
            } catch {
                note("probe() failed against a working destination: \(DeliveryLayer.describe(error))")
            }
            await destination.finish()
        } catch {
            note("setting up: \(error)")
        }

        // 5. A file changed while it is sent is never delivered as planned (the delivery layer's check after the
        // upload catches what the plugin does not): the attempt ends with FileChangedError, retryable.
        do {
            let destination = try await harness.working()
            let layer = DeliveryLayer(destinationName: harness.name, destination: destination, settings: settings)
            var item = try makeItem(folder, "changing.bin", harness.content("changing.bin", 7), destination: destination)
            item.modificationTime = item.modificationTime.addingTimeInterval(-60)  // planned before it changed
            switch await layer.deliver(item) {
            case .success: note("a file that changed after it was planned was recorded delivered")
            case .failure(let failure):
                if failure.scope != .file || !failure.failureClass.isRetryable {
                    note("a changed file failed as \(failure.failureClass.name) (\(failure.scope.rawValue)); expected retryable, file")
                }
            }
            await destination.finish()
        } catch {
            note("changed file: \(error)")
        }

        // 6. Cancellation ends an upload promptly.
        do {
            let destination = try await harness.working()
            let item = try makeItem(folder, "cancelled.bin", harness.content("cancelled.bin", 400), destination: destination)
            let started = ContinuousClock.now
            let upload = Task { try await destination.upload(item) { _ in } }
            upload.cancel()
            _ = try? await upload.value
            // A bound against an upload that goes on regardless, with room for a machine busy with a whole suite
            // (a plugin's cancellation went past 17 s there once).
            if ContinuousClock.now - started > .seconds(60) { note("a cancelled upload took \(ContinuousClock.now - started) to end") }
            await destination.finish()
        } catch {
            note("cancellation: \(error)")
        }

        // 7. Scope: nothing listening is the destination's problem, for uploads and for the probe alike.
        if let unreachable = harness.unreachable { do {
            let destination = try await unreachable()
            let item = try makeItem(folder, "unreachable.txt", harness.content("unreachable.txt", 1), destination: destination)
            do {
                _ = try await destination.upload(item) { _ in }
                note("an upload to an address where nothing listens succeeded")
            } catch {
                let classification = destination.classify(error)
                if classification != Classification(.retryable(), scope: .destination) {
                    note("nothing listening: an upload's error is \(classification), expected retryable (destination): \(DeliveryLayer.describe(error))")
                }
            }
            do {
                try await destination.probe()
                note("probe() passed where nothing listens")
            } catch {
                let classification = destination.classify(error)
                if classification.scope != .destination {
                    note("nothing listening: the probe's error is \(classification), expected destination-scoped")
                }
            }
            await destination.finish()
        } catch {
            note("unreachable: \(error)")
        } }

        // 8. Scope: credentials (or a configuration) refused block the destination.
        if let refused = harness.refused {
            do {
                let destination = try await refused()
                let item = try makeItem(folder, "refused.txt", harness.content("refused.txt", 2), destination: destination)
                do {
                    _ = try await destination.upload(item) { _ in }
                    note("an upload with refused credentials succeeded")
                } catch {
                    let classification = destination.classify(error)
                    if classification != Classification(.permanent, scope: .destination) {
                        note("credentials refused: the error is \(classification), expected permanent (destination): \(DeliveryLayer.describe(error))")
                    }
                }
                await destination.finish()
            } catch {
                note("refused: \(error)")
            }
        }
        return problems
    }

    static let settings = DeliverySettings(
        concurrency: 2,
        retry: RetrySettings(file: 0, artwork: 0, baseDelay: .milliseconds(10), maxDelay: .milliseconds(10), jitter: .none,
                             maxRetryInterval: .seconds(60), giveUpAfter: .seconds(3600)),
        recentCompleted: .seconds(1), recentFailed: .seconds(1), attemptTimeout: .seconds(60))

    /// Writes a file and plans it for `destination`, as the engine would (its hash, its remote name).
    static func makeItem(_ folder: TemporaryDirectory, _ path: String, _ data: Data, destination: any Destination) throws -> UploadItem {
        let url = try folder.write("source/" + path, data)
        let stat = try FileStat.of(url.path) ?? { throw CocoaError(.fileNoSuchFile) }()
        let sha = try FileHasher.sha256(path: url.path, sizeHint: stat.size)
        return UploadItem(source: "conformance", relativePath: path, absolutePath: url.path,
                          remoteName: try destination.remoteName(forRelativePath: path), size: stat.size,
                          modificationTime: stat.modificationTime, sha256: sha, isArtwork: false)
    }
}

/// Byte progress reported by one upload, from any thread.
final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Int64] = []
    func add(_ value: Int64) { lock.withLock { values.append(value) } }

    /// What is wrong with the reports, if anything: going back, past the size, or negative.
    func problem(size: Int64) -> String? {
        let all = lock.withLock { values }
        if all.contains(where: { $0 < 0 || $0 > size }) { return "out of range 0...\(size): \(all.prefix(10))" }
        if zip(all, all.dropFirst()).contains(where: { $1 < $0 }) { return "went back: \(all.prefix(20))" }
        return nil
    }
}
