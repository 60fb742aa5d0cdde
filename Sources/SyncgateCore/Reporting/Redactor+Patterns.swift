import Foundation

extension Redactor {
    /// The compiled needles of a ``Redactor``, as UTF-8 bytes: every exact form of every secret, indexed by their
    /// first two bytes so that a text is scanned once; the forms also matched percent-encoded (any byte as `%XX`,
    /// either case, a space as `+`), only scanned for in a text holding `%` or `+`; and the forms whose first bytes
    /// are scrubbed before a cut mark, indexed by their first four bytes.
    struct Patterns: Sendable {
        /// Exact forms, longest first.
        let needles: [[UInt8]]
        /// Forms matched through percent-encoding, longest first.
        let decodedNeedles: [[UInt8]]
        /// Forms whose leading fragment is scrubbed before a cut mark.
        let prefixNeedles: [[UInt8]]
        /// Bit per two-byte start of some exact needle.
        private let starts: [UInt64]
        /// Exact needle indices (longest first) per two-byte start.
        private let buckets: [UInt16: [Int]]
        /// Bit per two-byte start of some prefix needle.
        private let fragmentStarts: [UInt64]
        /// Prefix needle indices per four-byte start.
        private let fragmentBuckets: [UInt32: [Int]]
        private let longestPrefix: Int
        static let minimumFragment = 4

        init(needles: [[UInt8]] = [], decodedNeedles: [[UInt8]] = [], prefixNeedles: [[UInt8]] = []) {
            func longestFirst(_ list: [[UInt8]], atLeast minimum: Int) -> [[UInt8]] {
                Array(Set(list.filter { $0.count >= minimum })).sorted { $0.count != $1.count ? $0.count > $1.count : $0.lexicographicallyPrecedes($1) }
            }
            self.needles = longestFirst(needles, atLeast: 2)
            self.decodedNeedles = longestFirst(decodedNeedles, atLeast: 2)
            self.prefixNeedles = longestFirst(prefixNeedles, atLeast: Patterns.minimumFragment + 1)
            var starts = [UInt64](repeating: 0, count: 1024)
            var buckets: [UInt16: [Int]] = [:]
            for (index, needle) in self.needles.enumerated() {
                let key = UInt16(needle[0]) << 8 | UInt16(needle[1])
                starts[Int(key) >> 6] |= 1 << UInt64(key & 63)
                buckets[key, default: []].append(index)
            }
            var fragmentStarts = [UInt64](repeating: 0, count: 1024)
            var fragmentBuckets: [UInt32: [Int]] = [:]
            for (index, needle) in self.prefixNeedles.enumerated() {
                let key = UInt16(needle[0]) << 8 | UInt16(needle[1])
                fragmentStarts[Int(key) >> 6] |= 1 << UInt64(key & 63)
                let word = needle.withUnsafeBufferPointer { Patterns.word($0, 0) }
                fragmentBuckets[word, default: []].append(index)
            }
            self.fragmentStarts = fragmentStarts
            self.starts = starts
            self.buckets = buckets
            self.fragmentBuckets = fragmentBuckets
            longestPrefix = self.prefixNeedles.first?.count ?? 0
        }

        var isEmpty: Bool { needles.isEmpty }

        /// The text with needles replaced, or nil when nothing matched.
        func scrub(_ text: [UInt8]) -> [UInt8]? {
            var current = text
            var changed = false
            if let exact = replace(in: current, exactMatches(current)) {
                current = exact
                changed = true
            }
            if current.contains(0x25) || current.contains(0x2B), let decoded = replace(in: current, percentMatches(current)) {
                current = decoded
                changed = true
            }
            if let fragments = replace(in: current, fragmentMatches(current)) {
                current = fragments
                changed = true
            }
            return changed ? current : nil
        }

        /// `text` with the (ordered, disjoint) ranges replaced by the mark; nil when there are none.
        func replace(in text: [UInt8], _ ranges: [Range<Int>]) -> [UInt8]? {
            guard !ranges.isEmpty else { return nil }
            var out: [UInt8] = []
            out.reserveCapacity(text.count + 16)
            var copied = 0
            for range in ranges where range.lowerBound >= copied {
                out.append(contentsOf: text[copied..<range.lowerBound])
                out.append(contentsOf: Redactor.mark.utf8)
                copied = range.upperBound
            }
            out.append(contentsOf: text[copied...])
            return out
        }

        /// Where exact forms occur (leftmost, longest first).
        func exactMatches(_ text: [UInt8]) -> [Range<Int>] {
            var found: [Range<Int>] = []
            text.withUnsafeBufferPointer { t in
                let n = t.count
                var i = 0
                while i + 1 < n {
                    let key = UInt16(t[i]) << 8 | UInt16(t[i + 1])
                    if starts[Int(key) >> 6] & (1 << UInt64(key & 63)) != 0, let bucket = buckets[key] {
                        var matched = 0
                        for index in bucket where Patterns.equal(needles[index], needles[index].count, t, at: i) {
                            matched = needles[index].count
                            break
                        }
                        if matched > 0 {
                            found.append(i..<(i + matched))
                            i += matched
                            continue
                        }
                    }
                    i += 1
                }
            }
            return found
        }

        /// Where forms occur percent-encoded.
        func percentMatches(_ text: [UInt8]) -> [Range<Int>] {
            guard !decodedNeedles.isEmpty else { return [] }
            var found: [Range<Int>] = []
            text.withUnsafeBufferPointer { t in
                var i = 0
                while i < t.count {
                    var matched = 0
                    for needle in decodedNeedles {
                        if let length = Patterns.percentEncoded(needle, t, at: i) {
                            matched = length
                            break
                        }
                    }
                    if matched > 0 {
                        found.append(i..<(i + matched))
                        i += matched
                    } else {
                        i += 1
                    }
                }
            }
            return found
        }

        /// Where a form's first bytes (4 or more, not all of it) end right at a `...` or `…` cut mark.
        func fragmentMatches(_ text: [UInt8]) -> [Range<Int>] {
            guard longestPrefix > 0 else { return [] }
            var found: [Range<Int>] = []
            text.withUnsafeBufferPointer { t in
                var i = Patterns.minimumFragment
                while i + 2 < t.count {
                    let dots = t[i] == 0x2E && t[i + 1] == 0x2E && t[i + 2] == 0x2E
                    guard dots || (t[i] == 0xE2 && t[i + 1] == 0x80 && t[i + 2] == 0xA6) else {
                        i += 1
                        continue
                    }
                    let cut = i
                    // The farthest start first: the longest fragment.
                    var start = max(found.last?.upperBound ?? 0, cut - (longestPrefix - 1))
                    search: while cut - start >= Patterns.minimumFragment {
                        let key = UInt16(t[start]) << 8 | UInt16(t[start + 1])
                        if fragmentStarts[Int(key) >> 6] & (1 << UInt64(key & 63)) != 0, let bucket = fragmentBuckets[Patterns.word(t, start)] {
                            for index in bucket where prefixNeedles[index].count > cut - start {
                                if Patterns.equal(prefixNeedles[index], cut - start, t, at: start) {
                                    found.append(start..<cut)
                                    break search
                                }
                            }
                        }
                        start += 1
                    }
                    i = cut + 3
                }
            }
            return found
        }

        static func word(_ t: UnsafeBufferPointer<UInt8>, _ at: Int) -> UInt32 {
            UInt32(t[at]) << 24 | UInt32(t[at + 1]) << 16 | UInt32(t[at + 2]) << 8 | UInt32(t[at + 3])
        }

        /// Whether the first `count` bytes of `needle` are at `offset` of `t`.
        static func equal(_ needle: [UInt8], _ count: Int, _ t: UnsafeBufferPointer<UInt8>, at offset: Int) -> Bool {
            guard offset >= 0, offset + count <= t.count else { return false }
            return needle.withUnsafeBufferPointer { memcmp($0.baseAddress!, t.baseAddress! + offset, count) == 0 }
        }

        /// The length of `needle` at `offset` with any of its bytes percent-encoded (`%XX`, either case) and a
        /// space possibly as `+`; nil when it is not there.
        static func percentEncoded(_ needle: [UInt8], _ t: UnsafeBufferPointer<UInt8>, at offset: Int) -> Int? {
            var j = offset
            for byte in needle {
                guard j < t.count else { return nil }
                let c = t[j]
                if c == 0x25, j + 2 < t.count, let high = hex(t[j + 1]), let low = hex(t[j + 2]), high << 4 | low == byte {
                    j += 3
                } else if c == byte || (byte == 0x20 && c == 0x2B) {
                    j += 1
                } else {
                    return nil
                }
            }
            return j - offset
        }

        static func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x41...0x46: c - 0x41 + 10
            case 0x61...0x66: c - 0x61 + 10
            default: nil
            }
        }
    }
}
