import CSQLite

/// A failure SQLite reported on a connection, before the store names it as a `StoreError`
/// (`StoreError.sqlite(_:path:)`, which knows the store's path).
struct SQLiteError: Error, CustomStringConvertible {
    /// The extended result code (`.SQLITE_CONSTRAINT_UNIQUE`).
    let extendedResultCode: SQLiteResultCode
    let message: String
    /// The statement that failed, when there was one.
    let sql: String?

    init(_ code: SQLiteResultCode, message: String, sql: String? = nil) {
        extendedResultCode = code
        self.message = message
        self.sql = sql
    }

    /// The error SQLite holds for `connection`'s last call.
    init(on connection: OpaquePointer, sql: String? = nil) {
        self.init(SQLiteResultCode(rawValue: sqlite3_extended_errcode(connection)),
                  message: String(cString: sqlite3_errmsg(connection)), sql: sql)
    }

    /// The primary code (`.SQLITE_CONSTRAINT`).
    var resultCode: SQLiteResultCode { extendedResultCode.primaryResultCode }

    var description: String {
        "SQLite error \(extendedResultCode.rawValue): \(message)" + (sql.map { " - while executing `\($0)`" } ?? "")
    }
}
