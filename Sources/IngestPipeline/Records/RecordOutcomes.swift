import IngestStore

/// What an import did with the records it imported, by what happened to each record's
/// own object. Every imported record is one of inserted, updated or unchanged;
/// `duplicates` counts those of the last two whose object an earlier record of the
/// same run had made (a key repeated within the feed, merged by the update rules).
public struct RecordOutcomes: Codable, Sendable, Equatable {
    public var inserted = 0
    public var updated = 0
    public var unchanged = 0
    public var duplicates = 0

    public init(inserted: Int = 0, updated: Int = 0, unchanged: Int = 0, duplicates: Int = 0) {
        self.inserted = inserted
        self.updated = updated
        self.unchanged = unchanged
        self.duplicates = duplicates
    }

    mutating func count(inserted isNew: Bool, changed: Bool, duplicate: Bool) {
        if isNew { inserted += 1 } else if changed { updated += 1 } else { unchanged += 1 }
        if duplicate { duplicates += 1 }
    }

    var isEmpty: Bool { self == RecordOutcomes() }

    /// What a batch write did with its records' own objects.
    init(written result: BatchResult) {
        self.init(inserted: result.records - result.updated - result.unchanged, updated: result.updated,
                  unchanged: result.unchanged, duplicates: result.duplicates)
    }

    static func + (lhs: RecordOutcomes, rhs: RecordOutcomes) -> RecordOutcomes {
        RecordOutcomes(inserted: lhs.inserted + rhs.inserted, updated: lhs.updated + rhs.updated,
                       unchanged: lhs.unchanged + rhs.unchanged, duplicates: lhs.duplicates + rhs.duplicates)
    }
}
