/// The folders being watched: the watch descriptor of each place (a source and a folder's path in it, "" for the
/// source's own folder), and the places a descriptor stands for. A descriptor stands for several places when
/// sources overlap or a followed link leads to a folder watched elsewhere: the kernel gives one watch per folder,
/// so its events are reported under each place.
struct WatchedFolders {
    typealias Place = SourcePath

    /// A watched folder: its descriptor and identity (device, inode), the latter to notice link loops and a source
    /// folder replaced.
    struct Folder: Hashable {
        var wd: Int32
        var device: UInt64
        var inode: UInt64
    }

    private var byPlace: [Place: Folder] = [:]
    private var byWatch: [Int32: [Place]] = [:]

    /// How many watches are held.
    var watchCount: Int { byWatch.count }

    func places(of wd: Int32) -> [Place] { byWatch[wd] ?? [] }

    func folder(at place: Place) -> Folder? { byPlace[place] }

    func isWatched(_ wd: Int32) -> Bool { byWatch[wd] != nil }

    /// Records a place's watch. Returns a descriptor no place uses any more (the place had another one), to remove.
    mutating func add(_ place: Place, _ folder: Folder) -> Int32? {
        var unused: Int32?
        if let old = byPlace[place] {
            if old.wd == folder.wd {
                byPlace[place] = folder
                return nil
            }
            unused = detach(place)
        }
        byPlace[place] = folder
        byWatch[folder.wd, default: []].append(place)
        return unused
    }

    /// Forgets a place. Returns its descriptor when no other place uses it (to remove).
    mutating func detach(_ place: Place) -> Int32? {
        guard let folder = byPlace.removeValue(forKey: place) else { return nil }
        var places = byWatch[folder.wd] ?? []
        places.removeAll { $0 == place }
        if places.isEmpty {
            byWatch[folder.wd] = nil
            return folder.wd
        }
        byWatch[folder.wd] = places
        return nil
    }

    /// Forgets a folder and every folder below it (all of a source for ""). Returns the descriptors no place uses
    /// any more.
    mutating func detachTree(source: Int, path: String) -> [Int32] {
        let top = path.utf8
        let doomed = byPlace.keys.filter { place in
            guard place.source == source else { return false }
            if top.isEmpty { return true }
            let bytes = place.path.value.utf8
            guard bytes.starts(with: top) else { return false }
            return bytes.count == top.count || bytes[bytes.index(bytes.startIndex, offsetBy: top.count)] == UInt8(ascii: "/")
        }
        return doomed.compactMap { detach($0) }
    }

    /// Forgets a descriptor the kernel dropped. Returns the places it stood for.
    mutating func forget(_ wd: Int32) -> [Place] {
        guard let places = byWatch.removeValue(forKey: wd) else { return [] }
        for place in places where byPlace[place]?.wd == wd { byPlace[place] = nil }
        return places
    }

    /// Every descriptor a source's places use.
    func watches(ofSource source: Int) -> Set<Int32> {
        Set(byPlace.lazy.filter { $0.key.source == source }.map(\.value.wd))
    }

    /// Whether a folder with this identity is already watched at one of the folders above `path` in the source
    /// (a followed link leading back up: a loop).
    func isAncestor(source: Int, path: String, device: UInt64, inode: UInt64) -> Bool {
        var bytes = Array(path.utf8)
        while !bytes.isEmpty {
            bytes.removeLast(bytes.count - (bytes.lastIndex(of: UInt8(ascii: "/")) ?? 0))
            if let folder = byPlace[Place(source: source, path: String(decoding: bytes, as: UTF8.self))], folder.device == device && folder.inode == inode {
                return true
            }
        }
        return false
    }
}
