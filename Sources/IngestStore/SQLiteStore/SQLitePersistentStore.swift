import Foundation

/// A store in SQLite: a file in WAL mode (a `.wal` pool: one writer, readers that never
/// wait for it), or a database held in memory (a `.single` pool: SQLite in memory has no
/// WAL, so its one connection serves reads between writes).
struct SQLitePersistentStore: PersistentStore {
    let writer: SQLiteConnectionPool
    /// The file, or `memory:` and the store's ID (for messages).
    let path: String
    let isInMemory: Bool

    var dialect: SQLDialect { .sqlite }

    /// Runs `body` in one write transaction on the writer connection.
    /// - Throws: `StoreError` for SQLite's failures (`StoreError.sqlite(_:path:)`).
    func write<T>(_ body: (SQLiteDatabase) throws -> T) throws -> T {
        do {
            return try writer.write(body)
        } catch let error as SQLiteError {
            throw StoreError.sqlite(error, path: path)
        }
    }

    /// Runs `body` on a reader connection, against the last committed state.
    /// - Throws: as `write`.
    func read<T>(_ body: (SQLiteDatabase) throws -> T) throws -> T {
        do {
            return try writer.read(body)
        } catch let error as SQLiteError {
            throw StoreError.sqlite(error, path: path)
        }
    }

    /// SQLite holds every value the model accepts.
    func refusal(of value: Value) -> String? { nil }

    func writing<T>(_ body: (StoreConnection) throws -> T) throws -> T {
        try write { db in try body(StoreConnection(kind: .sqlite(db))) }
    }

    func reading<T>(_ body: (StoreConnection) throws -> T) throws -> T {
        try read { db in try body(StoreConnection(kind: .sqlite(db))) }
    }

    /// A read is one deferred transaction: its snapshot holds to its end.
    func readingSnapshot<T>(_ body: (StoreConnection) throws -> T) throws -> T {
        try reading(body)
    }

    /// Reserves `count` row numbers for `entity` inside the current write transaction;
    /// returns the first: they are consecutive (one writer at a time).
    static func reserveKeys(_ count: Int, for entity: EntityInfo, _ db: SQLiteDatabase) throws -> Int64 {
        let table = quoted(PersistentStoreCoordinator.sequenceTable)
        // A hierarchy's entities share their table, and its numbers (kept under the root's name).
        let next = try Int64.fetchOne(db, sql: "SELECT next FROM \(table) WHERE entity = ?", arguments: [entity.rootName])
            ?? (try Int64.fetchOne(db, sql: "SELECT max(\"_pk\") FROM \(entity.table)") ?? 0) + 1
        try db.execute(sql: "INSERT OR REPLACE INTO \(table) (entity, next) VALUES (?, ?)",
                       arguments: [entity.rootName, next + Int64(count)])
        return next
    }

    func reserveKeys(_ count: Int, for entity: EntityInfo, _ connection: StoreConnection) throws -> [Int64] {
        guard case .sqlite(let db) = connection.kind else { fatalError("a SQLite store lent another connection") }
        let first = try Self.reserveKeys(count, for: entity, db)
        return Array(first..<first + Int64(count))
    }

    /// Saves commit with synchronous=NORMAL: their WAL frames reach the disk at the next
    /// checkpoint. What a consumer is given must outlive a power loss, so the frames a
    /// history read saw are flushed first. Nothing to do in memory.
    func makeSeenHistoryDurable() {
        if !isInMemory { HistoryLog.flushWAL(of: path) }
    }

    func changeWaiter(storeID: UUID) throws -> any StoreChangeWaiter {
        isInMemory ? InMemoryChangeWaiter() : try SQLiteChangeWaiter(path: path, storeID: storeID)
    }
}
