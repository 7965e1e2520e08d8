package import Foundation
import CSQLite

/// SQLite copies bound text and blobs at once with this destructor.
let SQLITE_TRANSIENT = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

/// Binding and reading values with the sqlite3 C API on the connection's cached statements:
/// the insert/update hot path boxes no argument (see docs/design-notes.md).
enum SQLiteValues {
    static func bind(_ value: Value?, to statement: SQLiteStatement, at index: Int32) {
        guard let value else {
            sqlite3_bind_null(statement, index)
            return
        }
        switch value {
        case .string(let text), .decimal(let text):
            var text = text
            _ = text.withUTF8 { sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count), SQLITE_TRANSIENT) }
        case .int(let number): sqlite3_bind_int64(statement, index, number)
        case .double(let number): sqlite3_bind_double(statement, index, number)
        case .bool(let flag): sqlite3_bind_int64(statement, index, flag ? 1 : 0)
        case .date(let date): sqlite3_bind_double(statement, index, date.timeIntervalSinceReferenceDate)
        case .binary(let bytes):
            _ = bytes.withUnsafeBytes { sqlite3_bind_blob(statement, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count), SQLITE_TRANSIENT) }
        case .uuid(let uuid):
            _ = withUUIDText(uuid) { sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count), SQLITE_TRANSIENT) }
        }
    }

    static func bind(_ key: Int64?, to statement: SQLiteStatement, at index: Int32) {
        if let key { sqlite3_bind_int64(statement, index, key) } else { sqlite3_bind_null(statement, index) }
    }

    static func read(_ type: AttributeType, from statement: SQLiteStatement, at column: Int32) -> Value? {
        if sqlite3_column_type(statement, column) == SQLITE_NULL { return nil }
        switch type {
        case .string: return .string(text(statement, column))
        case .decimal: return .decimal(text(statement, column))
        case .int16, .int32, .int64: return .int(sqlite3_column_int64(statement, column))
        case .double: return .double(sqlite3_column_double(statement, column))
        case .bool: return .bool(sqlite3_column_int64(statement, column) != 0)
        case .date: return .date(Date(timeIntervalSinceReferenceDate: sqlite3_column_double(statement, column)))
        case .binary:
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count > 0, let base = sqlite3_column_blob(statement, column) else { return .binary([]) }
            return .binary(Array(UnsafeRawBufferPointer(start: base, count: count)))
        case .uuid: return UUID(uuidString: text(statement, column)).map(Value.uuid)
        }
    }

    static func readKey(from statement: SQLiteStatement, at column: Int32) -> Int64? {
        sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, column)
    }

    /// Text with its exact length, so a NUL inside it survives.
    static func text(_ statement: SQLiteStatement, _ column: Int32) -> String {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let base = sqlite3_column_text(statement, column) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self)
    }

    /// Steps a statement to completion on the write path; a failure becomes `SQLiteError`.
    static func stepToEnd(_ statement: SQLiteStatement, _ db: SQLiteDatabase) throws {
        let code = sqlite3_step(statement)
        guard code == SQLITE_DONE || code == SQLITE_ROW else { throw failure(statement, db) }
        sqlite3_reset(statement)
    }

    /// The error a step just returned; resets the statement.
    static func failure(_ statement: SQLiteStatement, _ db: SQLiteDatabase) -> SQLiteError {
        let error = SQLiteError(on: db.sqliteConnection, sql: sqlite3_sql(statement).map { String(cString: $0) })
        sqlite3_reset(statement)
        return error
    }
}

/// `uuid.uuidString`'s text (uppercase, hyphenated) written into a stack buffer:
/// Foundation formats it with sprintf, which costs more than the insert it is for.
package func withUUIDText<R>(_ uuid: UUID, _ body: (UnsafeBufferPointer<CChar>) -> R) -> R {
    let digits: StaticString = "0123456789ABCDEF"
    return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 36) { text in
        withUnsafeBytes(of: uuid.uuid) { bytes in
            digits.withUTF8Buffer { hex in
                var position = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[position] = 0x2D
                        position += 1
                    }
                    text[position] = CChar(bitPattern: hex[Int(byte >> 4)])
                    text[position + 1] = CChar(bitPattern: hex[Int(byte & 0x0F)])
                    position += 2
                }
            }
        }
        return body(UnsafeBufferPointer(text))
    }
}
