import CSQLite

extension SQLiteDatabase {
    /// Runs `sql` and calls `row` for each result row, in order, for `StoreConnection`. The
    /// statement is kept in the connection's cache unless `cached` is false (one-off
    /// statements: a dictionary fetch's).
    /// - Throws: `StoreError.database` when the statement fails; what `row` throws.
    func storeQuery(_ sql: String, _ arguments: [Value?], cached: Bool, _ row: (StoreRow) throws -> Void) throws {
        let statement: SQLiteStatement
        if cached {
            statement = try cachedStatement(sql: sql)
        } else {
            var prepared: SQLiteStatement?
            guard sqlite3_prepare_v2(sqliteConnection, sql, -1, &prepared, nil) == SQLITE_OK, let made = prepared else {
                throw StoreError.sqlite(self)
            }
            statement = made
        }
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
