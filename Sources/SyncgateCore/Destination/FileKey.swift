/// A file's identity: the source it comes from and its path relative to that source.
///
/// Paths compare byte for byte (their UTF-8), not by Unicode canonical equivalence as Swift strings do: on Linux
/// `café` written precomposed (NFC) and decomposed (NFD) are two different files, and both must be delivered.
public struct FileKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var source: String
    public var path: String

    public init(source: String, path: String) {
        self.source = source
        self.path = path
    }

    public var description: String { path }

    public static func == (lhs: FileKey, rhs: FileKey) -> Bool {
        lhs.source.utf8.elementsEqual(rhs.source.utf8) && lhs.path.utf8.elementsEqual(rhs.path.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(source.utf8.count)
        ExactString.combine(source, into: &hasher)
        ExactString.combine(path, into: &hasher)
    }

    public static func < (lhs: FileKey, rhs: FileKey) -> Bool {
        if !lhs.source.utf8.elementsEqual(rhs.source.utf8) { return lhs.source.utf8.lexicographicallyPrecedes(rhs.source.utf8) }
        return lhs.path.utf8.lexicographicallyPrecedes(rhs.path.utf8)
    }
}

/// A string that compares and hashes by its exact UTF-8 bytes (remote names, paths).
public struct ExactString: Sendable, Hashable, CustomStringConvertible {
    public var value: String
    public init(_ value: String) { self.value = value }
    public static func == (lhs: ExactString, rhs: ExactString) -> Bool { lhs.value.utf8.elementsEqual(rhs.value.utf8) }
    public func hash(into hasher: inout Hasher) {
        ExactString.combine(value, into: &hasher)
    }

    /// Feeds a string's UTF-8 bytes to `hasher` in one call (native strings: no copy).
    static func combine(_ string: String, into hasher: inout Hasher) {
        let done: Void? = string.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if done == nil {
            Array(string.utf8).withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }
    public var description: String { value }
}
