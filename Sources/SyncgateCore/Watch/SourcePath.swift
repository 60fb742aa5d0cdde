/// A path in one of the watched sources: the source's index in the watcher's list, and the path relative to its
/// folder ("" for the folder itself), compared byte for byte.
struct SourcePath: Hashable {
    var source: Int
    var path: ExactString

    init(source: Int, path: String) {
        self.source = source
        self.path = ExactString(path)
    }

    var isRoot: Bool { path.value.isEmpty }
}
