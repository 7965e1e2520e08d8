import Foundation
import CSQLite

/// One connection of the coordinator's backend, lent to a read or a write: the object
/// graph's SQL runs through it, whichever database holds the store. SQL is written with
/// SQLite's placeholders (`?`, `?3`); a PostgreSQL connection rewrites them as `$n` with
/// a cast from each value's kind (`PostgresSQL.numbered`).
///
/// An enum of the two connections, not a protocol: a save and a fetch read every column of
/// every row through `StoreRow`, where a switch costs less than a call through a witness
/// table; each case runs its backend's own code (`SQLiteDatabase.storeQuery` in SQLiteStore,
/// `PostgresConnection.storeQuery` in PostgreSQLStore). A store in memory is a SQLite one.
struct StoreConnection {
    enum Kind {
        case sqlite(SQLiteDatabase)
        case postgres(PostgresConnection)
    }

    let kind: Kind

    var dialect: SQLDialect {
        if case .postgres = kind { .postgres } else { .sqlite }
    }

    /// Runs `sql` and calls `row` for each result row, in order. On SQLite the statement is
    /// kept in the connection's cache unless `cached` is false (one-off statements: a
    /// dictionary fetch's).
    /// - Throws: `StoreError.database` when the statement fails; what `row` throws.
    func query(_ sql: String, _ arguments: [Value?] = [], cached: Bool = true, _ row: (StoreRow) throws -> Void) throws {
        switch kind {
        case .sqlite(let db): try db.storeQuery(sql, arguments, cached: cached, row)
        case .postgres(let connection): try connection.storeQuery(sql, arguments, row)
        }
    }

    /// Runs a statement that returns no rows; the number of rows it changed.
    /// - Throws: `StoreError.database`.
    @discardableResult
    func execute(_ sql: String, _ arguments: [Value?] = []) throws -> Int {
        switch kind {
        case .sqlite(let db): try db.storeExecute(sql, arguments)
        case .postgres(let connection): try PostgresSQL.run(sql, arguments, on: connection).changed
        }
    }

    /// Runs a statement whose result nobody reads: on PostgreSQL it goes with the
    /// connection's next statement, in one round trip (`PostgresConnection.enqueue`), and
    /// that statement throws its failure; on SQLite it runs now.
    /// - Throws: `StoreError.database` (SQLite), or a value PostgreSQL cannot hold.
    func executeLater(_ sql: String, _ arguments: [Value?] = []) throws {
        switch kind {
        case .sqlite(let db): _ = try db.storeExecute(sql, arguments)
        case .postgres(let connection): try PostgresSQL.enqueue(sql, arguments, on: connection)
        }
    }

    /// The first column of the first row as an integer, or nil (no row, or NULL).
    /// - Throws: `StoreError.database`.
    func int64(_ sql: String, _ arguments: [Value?] = []) throws -> Int64? {
        var result: Int64?
        var first = true
        try query(sql, arguments) { row in
            if first { result = row.key(0) }
            first = false
        }
        return result
    }

    /// The first column of every row as integers (NULLs left out).
    /// - Throws: `StoreError.database`.
    func int64s(_ sql: String, _ arguments: [Value?] = []) throws -> [Int64] {
        var result: [Int64] = []
        try query(sql, arguments) { row in if let key = row.key(0) { result.append(key) } }
        return result
    }
}

/// The current row of a query, read by column (from 0) and by the attribute type the
/// column holds.
struct StoreRow {
    enum Source {
        case sqlite(SQLiteStatement)
        case postgres(PostgresRows, Int)
    }

    let source: Source

    func isNull(_ column: Int) -> Bool {
        switch source {
        case .sqlite(let statement): sqlite3_column_type(statement, Int32(column)) == SQLITE_NULL
        case .postgres(let rows, let row): rows.isNull(row: row, column: column)
        }
    }

    /// An integer column (a row number, a count), or nil for NULL.
    func key(_ column: Int) -> Int64? {
        switch source {
        case .sqlite(let statement): SQLiteValues.readKey(from: statement, at: Int32(column))
        case .postgres(let rows, let row): rows[row, column].flatMap { Int64($0) }
        }
    }

    /// A column holding a value of `type`, or nil for NULL.
    func value(_ type: AttributeType, _ column: Int) -> Value? {
        switch source {
        case .sqlite(let statement): SQLiteValues.read(type, from: statement, at: Int32(column))
        case .postgres(let rows, let row): rows[row, column].flatMap { PostgresValues.parse($0, as: type) }
        }
    }

    /// A computed column with no attribute behind it: an integer, a double or text, by
    /// what the database says it is.
    func untypedValue(_ column: Int) -> Value? {
        switch source {
        case .sqlite(let statement):
            switch sqlite3_column_type(statement, Int32(column)) {
            case SQLITE_NULL: return nil
            case SQLITE_INTEGER: return .int(sqlite3_column_int64(statement, Int32(column)))
            case SQLITE_FLOAT: return .double(sqlite3_column_double(statement, Int32(column)))
            default: return SQLiteValues.read(.string, from: statement, at: Int32(column))
            }
        case .postgres(let rows, let row):
            guard let text = rows[row, column] else { return nil }
            return PostgresValues.parseUntyped(text, oid: rows.typeOID(column: column))
        }
    }

    /// A column as a double (averages), or nil for NULL.
    func double(_ column: Int) -> Double? {
        switch source {
        case .sqlite(let statement):
            sqlite3_column_type(statement, Int32(column)) == SQLITE_NULL ? nil : sqlite3_column_double(statement, Int32(column))
        case .postgres(let rows, let row): rows[row, column].flatMap { Double($0) }
        }
    }
}
