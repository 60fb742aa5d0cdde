import Foundation

/// The order in which a destination is sent the files of one delivery (`order:`, a delivery key): a list of keys,
/// each with rclone's `--order-by` syntax (`size`, `size,descending`), the first deciding most.
///
/// Keys that rank in few steps (`priority`, `artwork`) split the files into tiers: a tier starts once every file of
/// the tier before it has ended (delivered, failed, or left waiting), so that every file of a higher tier arrives
/// before any of a lower one; within a tier the files still go in parallel, started in the order of the keys that
/// follow. Keys that rank file by file (`size`, `modtime`, `name`) only order the starts: with `concurrency` above 1,
/// neighbours overlap. An empty order keeps the walk's order (sources by name, then paths byte by byte).
public struct DeliveryOrder: Sendable, Hashable, CustomStringConvertible {
    public enum Field: String, Sendable, Hashable, CaseIterable {
        /// The route's `priority` number (the highest of the routes that send the file there); higher first.
        case priority
        /// Files that match the `artwork` globs first.
        case artwork
        /// The file's size; small first.
        case size
        /// The file's modification time; newest first.
        case modtime
        /// The file's remote name, byte by byte; A before Z.
        case name

        /// Whether the key ranks in tiers (see ``DeliveryOrder``).
        var ranksInTiers: Bool { self == .priority || self == .artwork }

        /// The direction taken when none is written.
        var defaultDescending: Bool { self == .priority || self == .modtime }
    }

    public struct Key: Sendable, Hashable, CustomStringConvertible {
        public var field: Field
        /// Larger (newer, later in byte order) first.
        public var descending: Bool

        public init(_ field: Field, descending: Bool? = nil) {
            self.field = field
            self.descending = descending ?? field.defaultDescending
        }

        public var description: String {
            if field == .artwork { return field.rawValue }
            return field.rawValue + (descending ? ",descending" : ",ascending")
        }
    }

    /// What the keys compare of one file.
    public struct Fields: Sendable {
        public var priority: Int
        public var isArtwork: Bool
        public var size: Int64
        public var modificationTime: Date
        public var name: String

        public init(priority: Int, isArtwork: Bool, size: Int64, modificationTime: Date, name: String) {
            self.priority = priority
            self.isArtwork = isArtwork
            self.size = size
            self.modificationTime = modificationTime
            self.name = name
        }

        /// An upload's, with its route priority.
        public init(_ item: UploadItem, priority: Int) {
            self.init(priority: priority, isArtwork: item.isArtwork, size: item.size, modificationTime: item.modificationTime, name: item.remoteName)
        }
    }

    public var keys: [Key]

    public init(_ keys: [Key]) {
        self.keys = keys
    }

    /// The walk's order.
    public static let walk = DeliveryOrder([])
    /// Artwork first (a head unit's default: an app's icons matter first).
    public static let artworkFirst = DeliveryOrder([Key(.artwork)])

    public var description: String { keys.isEmpty ? "walk" : keys.map(\.description).joined(separator: " then ") }

    /// Whether the files' route priorities are needed.
    public var usesPriority: Bool { keys.contains { $0.field == .priority } }

    /// Reads one key as written: `size`, `size,descending`, `modtime,ascending`, `priority`, `artwork`, `name`
    /// (`walk`, alone as the whole order, is read by the decoder: it keeps the walk's order).
    public static func key(_ text: String) throws -> Key {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        let known = "priority, artwork, size, modtime, name, or walk alone; a direction after a comma: size,descending"
        guard let first = parts.first, let field = Field(rawValue: first.lowercased()), parts.count <= 2 else {
            let hint = parts.contains { $0.lowercased() == "mixed" }
                ? " (rclone's 'mixed' is not supported: files of one tier already go in parallel)" : ""
            throw ConfigValueError("'\(text)' is not an order (known: \(known))\(hint)")
        }
        guard parts.count == 2 else { return Key(field) }
        if field == .artwork { throw ConfigValueError("'\(text)': artwork takes no direction (artwork always goes first)") }
        switch parts[1].lowercased() {
        case "ascending", "asc": return Key(field, descending: false)
        case "descending", "desc": return Key(field, descending: true)
        default: throw ConfigValueError("'\(text)': the direction is ascending or descending")
        }
    }

    /// Whether `a` goes before `b` (false when the keys rank them alike).
    public func precedes(_ a: Fields, _ b: Fields) -> Bool {
        for key in keys {
            switch compare(key, a, b) {
            case .orderedAscending: return true
            case .orderedDescending: return false
            case .orderedSame: continue
            }
        }
        return false
    }

    private func compare(_ key: Key, _ a: Fields, _ b: Fields) -> ComparisonResult {
        func ordered<T: Comparable>(_ x: T, _ y: T) -> ComparisonResult {
            if x == y { return .orderedSame }
            return (x < y) != key.descending ? .orderedAscending : .orderedDescending
        }
        switch key.field {
        case .priority: return ordered(a.priority, b.priority)
        case .artwork: return a.isArtwork == b.isArtwork ? .orderedSame : (a.isArtwork ? .orderedAscending : .orderedDescending)
        case .size: return ordered(a.size, b.size)
        case .modtime: return ordered(a.modificationTime, b.modificationTime)
        case .name:
            let byBytes = ExactString.compare(a.name, b.name)
            return byBytes == 0 ? .orderedSame : ordered(byBytes, 0)
        }
    }

    /// The keys that split files into tiers: those ranking in tiers written before any key that ranks file by file.
    private var tierKeys: DeliveryOrder { DeliveryOrder(Array(keys.prefix { $0.field.ranksInTiers })) }

    /// `items` in this order (stable: files the keys rank alike keep the walk's order), cut into tiers (see
    /// ``DeliveryOrder``). One tier when no key ranks in tiers, none when there are no items.
    public func tiers<Item>(_ items: [Item], fields: (Item) -> Fields) -> [[Item]] {
        guard !items.isEmpty else { return [] }
        guard !keys.isEmpty else { return [items] }
        let ranked = items.enumerated().map { (index: $0.offset, item: $0.element, fields: fields($0.element)) }
        let sorted = ranked.sorted { a, b in
            if precedes(a.fields, b.fields) { return true }
            if precedes(b.fields, a.fields) { return false }
            return a.index < b.index
        }
        let cut = tierKeys
        var tiers: [[Item]] = [[sorted[0].item]]
        for index in sorted.indices.dropFirst() {
            if cut.precedes(sorted[index - 1].fields, sorted[index].fields) {
                tiers.append([sorted[index].item])
            } else {
                tiers[tiers.count - 1].append(sorted[index].item)
            }
        }
        return tiers
    }
}

extension DeliveryOrder: Decodable {
    /// One key as a string (`order: size,descending`), or a list of them (`order: [priority, size]`).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let texts: [String]
        if let one = try? container.decode(String.self) {
            texts = [one]
        } else {
            texts = try container.decode([String].self)
        }
        var keys: [Key] = []
        for text in texts where !(texts.count == 1 && text == "walk") {
            let key = try DeliveryOrder.key(text)
            if keys.contains(where: { $0.field == key.field }) { throw ConfigValueError("'\(key.field.rawValue)' is named twice") }
            keys.append(key)
        }
        self.init(keys)
    }
}
