import Foundation

/// What one destination keeps in the ledger to resume an interrupted upload in a later run, or after a crash: a
/// text per remote name, written by the plugin as the upload makes progress (an S3 multipart upload's id and its
/// finished parts), read back at the next attempt at that name, and removed once the upload is complete or given
/// up. The core never reads the text. Handed to a plugin by ``Destination/useResumeStore(_:)``.
///
/// Each call is one small transaction of its own, durable as every ledger write is (WAL, `synchronous = NORMAL`):
/// call it per finished part, not per byte.
public struct ResumeStore: Sendable {
    public let destination: String
    let ledger: Ledger?
    /// Dates what is saved (``save(_:_:now:)``).
    let clock: any SyncClock

    init(ledger: Ledger, destination: String, clock: any SyncClock = SystemClock()) {
        self.ledger = ledger
        self.destination = destination
        self.clock = clock
    }

    /// A store that keeps nothing (a destination used without a ledger: a library user, `plugin check`).
    public static func none(destination: String) -> ResumeStore { ResumeStore(destination: destination) }

    private init(destination: String) {
        self.ledger = nil
        self.destination = destination
        self.clock = SystemClock()
    }

    public struct Entry: Sendable {
        public var name: String
        public var value: String
        public var updatedAt: Date
    }

    /// The text kept for `name`, if any.
    public func load(_ name: String) throws -> String? {
        guard let ledger else { return nil }
        return try ledger.database.read { db in
            try db.fetchOne("SELECT value FROM resume_state WHERE destination = ? AND name = ?", [destination, name])?.string(0)
        }
    }

    /// Keeps `value` for `name`, replacing what was kept, dated `now` (nil: the store's clock).
    public func save(_ name: String, _ value: String, now: Date? = nil) throws {
        guard let ledger else { return }
        let now = now ?? clock.now()
        try ledger.checkIdentity()
        try ledger.database.write(durable: false) { db in
            try db.execute("""
                INSERT INTO resume_state (destination, name, value, updated_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (destination, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                """, [destination, name, value, now.timeIntervalSince1970])
        }
    }

    public func remove(_ name: String) throws {
        guard let ledger else { return }
        try ledger.database.write(durable: false) { db in
            try db.execute("DELETE FROM resume_state WHERE destination = ? AND name = ?", [destination, name])
        }
    }

    /// Everything kept for this destination (for a plugin that cleans up what was left behind).
    public func all() throws -> [Entry] {
        guard let ledger else { return [] }
        return try ledger.database.read { db in
            try db.fetchAll("SELECT name, value, updated_at FROM resume_state WHERE destination = ? ORDER BY name", [destination])
                .map { Entry(name: $0.string(0) ?? "", value: $0.string(1) ?? "", updatedAt: Date(timeIntervalSince1970: $0.double(2) ?? 0)) }
        }
    }
}

extension Ledger {
    /// The ``ResumeStore`` of one destination in this ledger (what the engine hands the destination).
    public func resumeStore(destination: String) -> ResumeStore { ResumeStore(ledger: self, destination: destination) }
}
