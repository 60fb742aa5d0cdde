import Foundation

/// Walks sources on a thread of its own and hands their files over in chunks, in the order the walk finds them
/// (each source in the byte order of its paths, see ``SourceScanner``). The walk is mostly system calls
/// (`getdents`, `fstatat`) and the planning that consumes it is mostly the ledger's cursor: run side by side they
/// take about as long as the longer of the two, not their sum.
///
/// At most `capacity` chunks wait at a time, so memory stays flat however many files the sources hold.
final class ScanPipeline: Sendable {
    enum Item {
        /// The next files of the source being walked.
        case files([ScannedFile])
        /// A source's walk ended, with what it passed over.
        case finished(source: String, warnings: [ScanWarning])
    }

    private let queue: BoundedQueue<Item>

    /// Starts walking `sources`, in the order given; a source in `splitSources` only for the files of this
    /// instance's `share` (``FleetShare/owns(source:path:)``).
    init(sources: [SourceConfig], share: FleetShare? = nil, splitSources: Set<String> = [], chunkSize: Int = 512, capacity: Int = 8) {
        let queue = BoundedQueue<Item>(capacity: capacity)
        self.queue = queue
        let thread = Thread {
            defer { queue.finish() }
            do {
                for source in sources {
                    var chunk: [ScannedFile] = []
                    chunk.reserveCapacity(chunkSize)
                    let owns: ((String) -> Bool)? = share.flatMap { share in
                        splitSources.contains(source.name) ? { (path: String) in share.owns(source: source.name, path: path) } : nil
                    }
                    let warnings = try SourceScanner().scan(source, share: owns) { file in
                        chunk.append(file)
                        if chunk.count >= chunkSize {
                            try ScanPipeline.put(queue, .files(chunk))
                            chunk.removeAll(keepingCapacity: true)
                        }
                    }
                    if !chunk.isEmpty { try ScanPipeline.put(queue, .files(chunk)) }
                    try ScanPipeline.put(queue, .finished(source: source.name, warnings: warnings))
                }
            } catch {
                // Only `Stopped` is thrown here: the consumer no longer wants the rest.
            }
        }
        thread.name = "syncgate.scan"
        thread.stackSize = 8 << 20  // the walk recurses once per folder level, like the main thread's would
        thread.start()
    }

    private struct Stopped: Error {}

    private static func put(_ queue: BoundedQueue<Item>, _ item: Item) throws {
        guard queue.put(item) else { throw Stopped() }
    }

    /// The next item, waiting for the walk if need be; nil once every source was walked.
    func next() -> Item? { queue.take() }

    /// Ends the walk early (or confirms it ended) and waits for its thread to let go of the sources.
    func stop() {
        queue.stop()
        queue.leave()
        queue.waitUntilFinished()
    }
}
