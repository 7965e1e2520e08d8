import CSQLite

extension PersistentStoreCoordinator {
    /// Turns SQLite's memory statistics off in this process. With them on (SQLite's default)
    /// every SQLite allocation takes a process-wide mutex to count bytes: about 1,000
    /// instructions a record of an import (Performance.md). The `ingest` command does this
    /// first thing; a program that owns its process may too.
    ///
    /// Call it before anything in the process opens SQLite: SQLite takes the setting only
    /// before it initializes, and the call is not thread-safe. It stops
    /// `sqlite3_memory_used`, `sqlite3_status64`'s memory figures and SQLite's soft and hard
    /// heap limits for every user of SQLite in the process, which is why a library does not
    /// do it by itself.
    /// - Returns: whether SQLite took the setting (false once it has initialized).
    @discardableResult
    public static func disableSQLiteMemoryStatistics() -> Bool {
        ingest_sqlite3_disable_memory_statistics() == SQLITE_OK
    }
}
