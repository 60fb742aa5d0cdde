/// Files that changed and wait until they have not changed for the settle time. Each event about a file pushes its
/// due time back to the event's time plus `settle` and clears its stamp (its size and modification time, taken
/// again soon after by the caller); when it falls due the caller takes the stamp once more: the same, the file is
/// ready; different (written without an event the watcher saw, as through `mmap`), it waits again.
///
/// Due times are rounded up to a grid of a tenth of the settle time (at most 250 ms), so files written within one
/// step of it fall due together and are reported in one batch, at the cost of that much more wait.
///
/// At most `limit` files wait: ``arm(_:now:)`` refuses the next one, and the caller collapses the queue into one
/// rescan rather than grow. Due times sit in a binary heap with at most one record per file (a record whose file
/// was re-armed meanwhile is pushed again when it surfaces), rebuilt when records of removed files pile up, so
/// memory follows the files waiting, not the events.
struct SettleQueue {
    typealias Key = SourcePath

    /// What a file looked like: size and modification time (to the nanosecond).
    struct Stamp: Hashable {
        var size: Int64
        var seconds: Int
        var nanoseconds: Int
    }

    struct Entry {
        /// Monotonic nanoseconds.
        var due: Int64
        /// nil until taken after the latest event.
        var stamp: Stamp?
    }

    private struct Record {
        var due: Int64
        var key: Key
    }

    let settle: Int64
    let limit: Int
    /// The grid due times are rounded up to (nanoseconds; 0: none).
    let step: Int64
    private var entries: [Key: Entry] = [:]
    private var heap: [Record] = []

    /// `settle` in nanoseconds.
    init(settle: Int64, limit: Int) {
        self.settle = settle
        self.limit = limit
        step = min(settle / 10, 250_000_000)
    }

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    /// The earliest due time (possibly of a record superseded since: waking early is harmless).
    var nextDue: Int64? { heap.first?.due }

    /// Starts or restarts a file's wait; false (and nothing kept) when `limit` files already wait.
    mutating func arm(_ key: Key, now: Int64) -> Bool {
        var due = now + settle
        if step > 0 { due = (due + step - 1) / step * step }
        if entries[key] != nil {
            entries[key]!.due = due
            entries[key]!.stamp = nil
            return true
        }
        guard entries.count < limit else { return false }
        entries[key] = Entry(due: due, stamp: nil)
        push(Record(due: due, key: key))
        if heap.count > 2 * entries.count + 1024 { rebuild() }
        return true
    }

    func contains(_ key: Key) -> Bool { entries[key] != nil }

    /// Whether a file waits without a stamp (taken since its latest event).
    func needsStamp(_ key: Key) -> Bool {
        guard let entry = entries[key] else { return false }
        return entry.stamp == nil
    }

    mutating func setStamp(_ key: Key, _ stamp: Stamp) {
        if entries[key] != nil { entries[key]!.stamp = stamp }
    }

    mutating func remove(_ key: Key) {
        entries[key] = nil
    }

    mutating func removeAll() {
        entries = [:]
        heap = []
    }

    /// Takes out the files due at `now` (earliest first), with the stamp each had.
    mutating func popDue(now: Int64) -> [(key: Key, stamp: Stamp?)] {
        var due: [(key: Key, stamp: Stamp?)] = []
        while let top = heap.first, top.due <= now {
            popTop()
            guard let entry = entries[top.key] else { continue }  // removed since
            if entry.due > top.due {  // re-armed since: back in at its new time
                push(Record(due: entry.due, key: top.key))
                continue
            }
            entries[top.key] = nil
            due.append((top.key, entry.stamp))
        }
        if entries.isEmpty && heap.isEmpty {  // give back the room a burst took
            entries = [:]
            heap = []
        }
        return due
    }

    /// Puts a file that changed while it settled back to wait again from `now`, with its new stamp.
    mutating func rearm(_ key: Key, stamp: Stamp, now: Int64) {
        guard arm(key, now: now) else { return }
        setStamp(key, stamp)
    }

    // MARK: the heap (smallest due first)

    private mutating func push(_ record: Record) {
        heap.append(record)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].due < heap[parent].due else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].due < heap[smallest].due { smallest = left }
            if right < heap.count && heap[right].due < heap[smallest].due { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }

    /// One record per waiting file again.
    private mutating func rebuild() {
        heap = []
        heap.reserveCapacity(entries.count)
        for (key, entry) in entries { push(Record(due: entry.due, key: key)) }
    }
}
