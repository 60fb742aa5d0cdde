/// What the planning reads files from: a walk of whole sources (``ScanPipeline``), or a list of chosen files
/// (``PathWalk``). Files come in chunks, each source's in the byte order of their paths, and each source's end is
/// reported with what it passed over.
protocol FileWalk: AnyObject {
    /// The next item; nil once everything was handed out.
    func next() -> ScanPipeline.Item?
    /// Ends the walk early (or confirms it ended).
    func stop()
}

extension ScanPipeline: FileWalk {}
