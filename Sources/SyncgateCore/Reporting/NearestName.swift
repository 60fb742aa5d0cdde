/// The "did you mean" of a mistyped name (a command, a config key): the known name nearest to it, as rclone, aws
/// and git suggest one. Near means few edits (insertions, deletions, substitutions, swaps of neighbours): at most
/// one for a word of up to four letters, two for longer ones; case is ignored.
public enum NearestName {
    /// The nearest of `candidates` to `word`, or nil when none is near (or `word` is one of them). Ties go to the
    /// first in `candidates`' sorted order.
    public static func suggestion(for word: String, among candidates: some Sequence<String>) -> String? {
        let lowered = Array(word.lowercased())
        let allowed = lowered.count <= 4 ? 1 : 2
        var best: (name: String, distance: Int)? = nil
        for candidate in Set(candidates).sorted() where candidate != word {
            let distance = editDistance(lowered, Array(candidate.lowercased()))
            guard distance <= allowed else { continue }
            if best == nil || distance < best!.distance { best = (candidate, distance) }
        }
        return best?.name
    }

    /// Optimal string alignment distance: Levenshtein's edits plus a swap of two neighbouring characters.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var before = [Int](repeating: 0, count: b.count + 1)  // row i-2
        var previous = Array(0...b.count)  // row i-1
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], before[j - 2] + 1)
                }
            }
            (before, previous, current) = (previous, current, before)
        }
        return previous[b.count]
    }
}
