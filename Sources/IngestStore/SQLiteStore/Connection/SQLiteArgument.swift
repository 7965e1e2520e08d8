import CSQLite

/// A value the connection's helpers (`execute(sql:arguments:)`, `fetchOne`) bind to a
/// statement's parameter. The hot paths bind `Value`s themselves (`SQLiteValues.bind`).
protocol SQLiteArgument {
    func bind(to statement: SQLiteStatement, at index: Int32)
}

extension String: SQLiteArgument {
    func bind(to statement: SQLiteStatement, at index: Int32) { SQLiteValues.bind(.string(self), to: statement, at: index) }
}

extension Int64: SQLiteArgument {
    func bind(to statement: SQLiteStatement, at index: Int32) { sqlite3_bind_int64(statement, index, self) }
}

extension Int: SQLiteArgument {
    func bind(to statement: SQLiteStatement, at index: Int32) { sqlite3_bind_int64(statement, index, Int64(self)) }
}

/// A column the connection's helpers read (`String.fetchOne(db, sql:)`): nil for NULL.
protocol SQLiteColumn {
    static func read(_ statement: SQLiteStatement, _ column: Int32) -> Self
}

extension String: SQLiteColumn {
    static func read(_ statement: SQLiteStatement, _ column: Int32) -> String { SQLiteValues.text(statement, column) }
}

extension Int64: SQLiteColumn {
    static func read(_ statement: SQLiteStatement, _ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
}

extension Int: SQLiteColumn {
    static func read(_ statement: SQLiteStatement, _ column: Int32) -> Int { Int(sqlite3_column_int64(statement, column)) }
}

extension Bool: SQLiteColumn {
    static func read(_ statement: SQLiteStatement, _ column: Int32) -> Bool { sqlite3_column_int64(statement, column) != 0 }
}

extension SQLiteColumn {
    /// The first column of the first row `sql` returns, or nil (no row, or NULL).
    /// - Throws: `SQLiteError`.
    static func fetchOne(_ db: SQLiteDatabase, sql: String, arguments: [any SQLiteArgument] = []) throws -> Self? {
        var result: Self?
        try db.forEachRow(sql: sql, arguments: arguments) { statement in
            if sqlite3_column_type(statement, 0) != SQLITE_NULL { result = read(statement, 0) }
            return false
        }
        return result
    }

    /// The first column of every row `sql` returns, NULLs left out.
    /// - Throws: `SQLiteError`.
    static func fetchAll(_ db: SQLiteDatabase, sql: String, arguments: [any SQLiteArgument] = []) throws -> [Self] {
        var result: [Self] = []
        try db.forEachRow(sql: sql, arguments: arguments) { statement in
            if sqlite3_column_type(statement, 0) != SQLITE_NULL { result.append(read(statement, 0)) }
            return true
        }
        return result
    }
}
