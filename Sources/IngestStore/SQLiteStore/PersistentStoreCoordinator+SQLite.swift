/// The SQLite-only paths (the batch inserter, bulk loads, the integrity check, the SQLite
/// import's bookkeeping) speak SQLite's own connection (`SQLiteDatabase`): they reach it here, the one place the
/// coordinator asks which backend it has.
extension PersistentStoreCoordinator {
    /// The SQLite store.
    /// - Throws: `StoreError.postgres(.unsupported)` on a PostgreSQL store, whose imports
    ///   go through `PostgresStore`.
    func sqliteStore() throws -> SQLitePersistentStore {
        guard let sqlite = store as? SQLitePersistentStore else {
            throw StoreError.postgres(.unsupported("this operation is SQLite-only (\(path) is a PostgreSQL store)"))
        }
        return sqlite
    }

    /// Runs `body` in one write transaction on the writer connection (SQLite only).
    func write<T>(_ body: (SQLiteDatabase) throws -> T) throws -> T {
        try sqliteStore().write(body)
    }

    /// Runs `body` on a reader connection, against the last committed state (SQLite only).
    func read<T>(_ body: (SQLiteDatabase) throws -> T) throws -> T {
        try sqliteStore().read(body)
    }
}
