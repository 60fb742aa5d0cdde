import Foundation

/// A list that several tasks append to and a test reads.
final class LockedList<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Element] = []

    func append(_ item: Element) { lock.withLock { items.append(item) } }
    var all: [Element] { lock.withLock { items } }
    var count: Int { lock.withLock { items.count } }
}
