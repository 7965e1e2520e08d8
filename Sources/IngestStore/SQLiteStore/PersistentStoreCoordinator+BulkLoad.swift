
extension PersistentStoreCoordinator {
    static let deferredIndexesKey = "_deferredIndexes"
    static let indexBuildCacheKiB = 2 * 1024

    /// Drops the secondary indexes (attribute indexes and to-one columns' indexes) for a
    /// bulk load, and records that they are missing. Uniqueness indexes stay, so
    /// find-or-create and merge policies work as always; reads still work, slower.
    ///
    /// Each save of a bulk load would otherwise rewrite a page of every index with
    /// random keys per object saved, more as the store grows; building an index once at
    /// the end sorts instead. Calling it again while deferred does nothing.
    /// - Throws: `StoreError.database` when the store cannot be written.
    public func deferSecondaryIndexes() throws {
        try write { db in
            for info in schema.entities.values {
                for index in info.secondaryIndexes { try db.execute(sql: "DROP INDEX IF EXISTS \(quoted(index.name))") }
            }
            try db.execute(sql: "INSERT OR REPLACE INTO \(quoted(Self.metadataTable)) (key, value) VALUES (?, 'true')",
                           arguments: [Self.deferredIndexesKey])
        }
    }

    /// Builds the secondary indexes `deferSecondaryIndexes()` dropped, in one transaction.
    /// - Throws: `StoreError.database` when the store cannot be written.
    public func restoreSecondaryIndexes() throws {
        try write { db in
            // The sorter may hold as much as the page cache in memory besides it: keep the
            // build's memory near the import's by sorting in a smaller budget (the rest spills to temporary files).
            try db.execute(sql: "PRAGMA cache_size = -\(Self.indexBuildCacheKiB)")
            defer { try? db.execute(sql: "PRAGMA cache_size = -\(Self.writerCacheKiB)") }
            for info in schema.entities.values.sorted(by: { $0.name < $1.name }) {
                for index in info.secondaryIndexes { try db.execute(sql: index.create) }
            }
            try db.execute(sql: "DELETE FROM \(quoted(Self.metadataTable)) WHERE key = ?", arguments: [Self.deferredIndexesKey])
        }
    }

    /// SQLite's default: the writer checkpoints once the WAL holds this many pages.
    static let defaultCheckpointPages = 1_000
    /// A bulk load's: measured on the 1M-record benchmark, 10,000 pages (a WAL of about
    /// 40 MB) took the import from 5.2 s to 4.4 s. (A checkpoint thread alone, the writer's
    /// own checkpoints off, let the WAL grow to the size of the store: a checkpoint running
    /// beside a busy writer never finishes, so the log never starts over. Both together,
    /// `WALCheckpointer` beside these, keep the log short and the writer's checkpoints quick.)
    static let bulkLoadCheckpointPages = 10_000
    /// A bulk load's writer page cache while the secondary indexes are deferred: it then
    /// touches little more than the tables' last pages and the uniqueness indexes, and
    /// 4 MiB ran as fast as 8 MiB with 7 MB less resident memory.
    static let bulkLoadCacheKiB = 4 * 1024

    /// Tunes the writer for a bulk load: fewer, larger WAL checkpoints (a page that
    /// many saves rewrote is copied into the database once, not once per save), and
    /// with `indexesDeferred` a smaller page cache. `endBulkLoad()` restores the defaults.
    /// - Throws: `StoreError.database` when the writer cannot be told.
    public func beginBulkLoad(indexesDeferred: Bool) throws {
        try write { db in
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(Self.bulkLoadCheckpointPages)")
            if indexesDeferred { try db.execute(sql: "PRAGMA cache_size = -\(Self.bulkLoadCacheKiB)") }
        }
        (store as? SQLitePersistentStore)?.writer.startCheckpointing(every: Self.bulkLoadCheckpointInterval)
    }

    /// How often a bulk load's WAL is copied into the database beside the writer (`WALCheckpointer`).
    static let bulkLoadCheckpointInterval = 0.05

    /// Puts the writer's checkpoints and page cache back as they were before `beginBulkLoad`.
    /// - Throws: `StoreError.database` when the writer cannot be told.
    public func endBulkLoad() throws {
        (store as? SQLitePersistentStore)?.writer.stopCheckpointing()
        try write { db in
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(Self.defaultCheckpointPages)")
            try db.execute(sql: "PRAGMA cache_size = -\(Self.writerCacheKiB)")
        }
    }

    /// True while a bulk load has the secondary indexes dropped.
    /// - Throws: `StoreError.database` when the store cannot be read.
    public func secondaryIndexesDeferred() throws -> Bool {
        try read { db in
            try String.fetchOne(db, sql: "SELECT value FROM \(quoted(Self.metadataTable)) WHERE key = ?",
                                arguments: [Self.deferredIndexesKey]) != nil
        }
    }
}
