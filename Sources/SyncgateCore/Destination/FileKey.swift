import Foundation

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
        ExactString.compare(lhs.path, rhs.path) == 0 && ExactString.compare(lhs.source, rhs.source) == 0
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(source.utf8.count)
        ExactString.combine(source, into: &hasher)
        ExactString.combine(path, into: &hasher)
    }

    public static func < (lhs: FileKey, rhs: FileKey) -> Bool {
        let sources = ExactString.compare(lhs.source, rhs.source)
        return sources != 0 ? sources < 0 : ExactString.compare(lhs.path, rhs.path) < 0
    }
}

/// A string that compares and hashes by its exact UTF-8 bytes (remote names, paths).
public struct ExactString: Sendable, Hashable, CustomStringConvertible {
    public var value: String
    public init(_ value: String) { self.value = value }
    public static func == (lhs: ExactString, rhs: ExactString) -> Bool { compare(lhs.value, rhs.value) == 0 }
    public func hash(into hasher: inout Hasher) {
        ExactString.combine(value, into: &hasher)
    }

    /// The byte order of two strings' UTF-8 (memcmp's sign: negative, 0, positive).
    public static func compare(_ a: String, _ b: String) -> Int {
        var a = a, b = b  // withUTF8 reads native strings in place
        return a.withUTF8 { x in b.withUTF8 { y in compare(x, y) } }
    }

    /// The byte order of two byte strings (memcmp's sign: negative, 0, positive).
    public static func compare<A: ContiguousBytes, B: ContiguousBytes>(_ a: A, _ b: B) -> Int {
        a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in
                let common = min(x.count, y.count)
                if common > 0 {
                    let order = memcmp(x.baseAddress!, y.baseAddress!, common)
                    if order != 0 { return Int(order) }
                }
                return x.count - y.count
            }
        }
    }

    static func compare(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Int {
        compare(UnsafeRawBufferPointer(x), UnsafeRawBufferPointer(y))
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
