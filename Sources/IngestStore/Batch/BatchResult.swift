/// A record a batch write rejected, with the reason in the model's names.
package struct BatchRejection: Sendable, Equatable {
    public var record: Int
    public var reason: String

    public init(record: Int, reason: String) {
        self.record = record
        self.reason = reason
    }
}

/// What one batch write did, on either store.
package struct BatchResult: Sendable {
    /// Records written (all their rows).
    public var records = 0
    public var rejected: [BatchRejection] = []
    /// New rows per entity name.
    public var inserted: [String: Int] = [:]
    /// Records whose own object was stored already and changed.
    public var updated = 0
    /// Records whose own object was stored already and did not change.
    public var unchanged = 0
    /// Of those updated or unchanged: records whose object an earlier record of this run made.
    public var duplicates = 0
    /// Seconds inside the write transaction (holding the store's write lock).
    public var lockedSeconds = 0.0
    /// Times the save's transaction was rolled back and tried again (a deadlock, or a key
    /// another process made at the same moment).
    public var retries = 0
    /// What the write changed, for the history transaction of the save it is part of
    /// (filled by `PostgresBatchWriter` when it records history).
    package var history = HistoryChanges()

    public init() {}
}


extension BatchResult {
    /// Adds what another write of the same save did (a record written on its own).
    package mutating func add(_ other: BatchResult) {
        records += other.records
        rejected += other.rejected
        inserted.merge(other.inserted, uniquingKeysWith: +)
        updated += other.updated
        unchanged += other.unchanged
        duplicates += other.duplicates
        history.merge(other.history)
    }

    /// Counts a record whose own object was stored already (by an earlier record of this
    /// run or before it): updated when the write changed a value, else unchanged; and a
    /// duplicate when this run made the object. Both stores count here, so a feed gives
    /// the same summary on either.
    package mutating func countStored(changed: Bool, madeThisRun: Bool) {
        if changed { updated += 1 } else { unchanged += 1 }
        if madeThisRun { duplicates += 1 }
    }
}
