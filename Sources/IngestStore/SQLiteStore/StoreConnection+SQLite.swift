import CSQLite

extension SQLiteDatabase {
    /// Runs `sql` and calls `row` for each result row, in order, for `StoreConnection`. The
    /// statement is kept in the connection's cache unless `cached` is false (one-off
    /// statements: a dictionary fetch's).
    /// - Throws: `SQLiteError` when the statement does not compile (the store's `write` and
    ///   `read` name it as a `StoreError`); `StoreError.database` when a step fails; what
    ///   `row` throws.
    func storeQuery(_ sql: String, _ arguments: [Value?], cached: Bool, _ row: (StoreRow) throws -> Void) throws {
        let statement = cached ? try cachedStatement(sql: sql) : try prepare(sql)
        defer {
            if cached { sqlite3_reset(statement); sqlite3_clear_bindings(statement) } else { sqlite3_finalize(statement) }
        }
        for (index, value) in arguments.enumerated() { SQLiteValues.bind(value, to: statement, at: Int32(index + 1)) }
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { throw StoreError.sqlite(self) }
            try row(StoreRow(source: .sqlite(statement)))
        }
    }

    /// Runs a statement that returns no rows, for `StoreConnection`; the rows it changed.
    /// - Throws: `StoreError.database`.
    func storeExecute(_ sql: String, _ arguments: [Value?]) throws -> Int {
        let statement = try cachedStatement(sql: sql)
        defer { sqlite3_clear_bindings(statement) }
        for (index, value) in arguments.enumerated() { SQLiteValues.bind(value, to: statement, at: Int32(index + 1)) }
        try SQLiteValues.stepToEnd(statement, self)
        return Int(sqlite3_changes(sqliteConnection))
    }
}

extension StoreError {
    /// The error SQLite reports on `db` for the statement that just failed.
    static func sqlite(_ db: SQLiteDatabase) -> StoreError {
        .database(String(cString: sqlite3_errmsg(db.sqliteConnection)), code: SQLiteResultCode(rawValue: sqlite3_extended_errcode(db.sqliteConnection)))
    }
}
