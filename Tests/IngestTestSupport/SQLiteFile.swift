import CSQLite
import Foundation

/// A SQLite file opened from outside the store, with the C API alone: what tests use to
/// look at the rows an import left, or to damage and hand-edit a store. Independent of the
/// store's own connection layer, so a fault there cannot hide itself.
public final class SQLiteFile {
    public struct Failure: Error, CustomStringConvertible {
        public let code: Int32
        public let message: String
        public var description: String { "SQLite error \(code): \(message)" }
    }

    /// A parameter's value.
    public enum Argument: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
        case text(String)
        case integer(Int64)

        public init(stringLiteral value: String) { self = .text(value) }
        public init(integerLiteral value: Int64) { self = .integer(value) }
    }

    private let handle: OpaquePointer

    /// Opens (or, unless `readOnly`, creates) the file, waiting up to `busyTimeout` seconds
    /// for another process's lock.
    /// - Throws: `Failure`.
    public init(_ path: String, readOnly: Bool = false, busyTimeout: Double = 5) throws {
        var opened: OpaquePointer?
        let flags = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        let code = sqlite3_open_v2(path, &opened, flags, nil)
        guard code == SQLITE_OK, let opened else {
            let failure = Failure(code: code, message: opened.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)")
            sqlite3_close_v2(opened)
            throw failure
        }
        handle = opened
        sqlite3_busy_timeout(handle, Int32(busyTimeout * 1000))
        // A misspelt "column" in a test's SQL fails instead of reading as a string, as the store's own connections do.
        ingest_sqlite3_disable_double_quoted_literals(handle)
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs every statement of `sql`, giving `arguments` to their parameters in order.
    /// - Throws: `Failure`.
    public func execute(_ sql: String, _ arguments: [Argument] = []) throws {
        _ = try run(sql, arguments)
    }

    /// Every row the statements of `sql` return, each column as text (`nil` for NULL; a
    /// real as Swift prints a Double; a blob as `\x` and its bytes in hex, PostgreSQL's form).
    /// - Throws: `Failure`.
    public func rows(_ sql: String, _ arguments: [Argument] = []) throws -> [[String?]] {
        try run(sql, arguments)
    }

    /// One column of a row, by name.
    public struct Cell {
        public let name: String
        /// As `rows` gives it.
        public let value: String?
        /// Whether SQLite holds it as text (a number held as text tells itself apart so).
        public let isText: Bool
    }

    /// Every row the statements of `sql` return, each column with its name.
    /// - Throws: `Failure`.
    public func namedRows(_ sql: String, _ arguments: [Argument] = []) throws -> [[Cell]] {
        var rows: [[Cell]] = []
        try run(sql, arguments) { statement in
            rows.append((0..<sqlite3_column_count(statement)).map { index in
                Cell(name: String(cString: sqlite3_column_name(statement, index)), value: column(statement, index),
                     isText: sqlite3_column_type(statement, index) == SQLITE_TEXT)
            })
        }
        return rows
    }

    /// The first column of every row, NULLs left out.
    /// - Throws: `Failure`.
    public func strings(_ sql: String, _ arguments: [Argument] = []) throws -> [String] {
        try rows(sql, arguments).compactMap { $0.first ?? nil }
    }

    /// The first column of the first row, or nil (no row, or NULL).
    /// - Throws: `Failure`.
    public func string(_ sql: String, _ arguments: [Argument] = []) throws -> String? {
        try rows(sql, arguments).first?.first ?? nil
    }

    /// The first column of the first row as an integer, or nil (no row, or NULL).
    /// - Throws: `Failure` also when SQLite holds it as anything but an integer.
    public func int(_ sql: String, _ arguments: [Argument] = []) throws -> Int64? {
        try ints(sql, arguments, keepingNULLs: true).first ?? nil
    }

    /// The first column of every row as integers.
    /// - Throws: `Failure` also for a value SQLite holds as anything but an integer (NULL too).
    public func ints(_ sql: String, _ arguments: [Argument] = []) throws -> [Int64] {
        try ints(sql, arguments, keepingNULLs: false).map { $0! }
    }

    private func ints(_ sql: String, _ arguments: [Argument], keepingNULLs: Bool) throws -> [Int64?] {
        var values: [Int64?] = []
        var wrong: String?
        try run(sql, arguments) { statement in
            switch sqlite3_column_type(statement, 0) {
            case SQLITE_INTEGER: values.append(sqlite3_column_int64(statement, 0))
            case SQLITE_NULL where keepingNULLs: values.append(nil)
            default: wrong = wrong ?? column(statement, 0) ?? "NULL"
            }
        }
        if let wrong { throw Failure(code: SQLITE_MISMATCH, message: "not an integer: \(wrong) (\(sql))") }
        return values
    }

    private func failure() -> Failure {
        Failure(code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)))
    }

    private func run(_ sql: String, _ arguments: [Argument]) throws -> [[String?]] {
        var rows: [[String?]] = []
        try run(sql, arguments) { statement in
            rows.append((0..<sqlite3_column_count(statement)).map { column(statement, $0) })
        }
        return rows
    }

    private func run(_ sql: String, _ arguments: [Argument], _ row: (OpaquePointer) -> Void) throws {
        var remaining = arguments[...]
        try sql.withCString { start in
            var next: UnsafePointer<CChar>? = start
            while let current = next, current.pointee != 0 {
                var statement: OpaquePointer?
                guard sqlite3_prepare_v2(handle, current, -1, &statement, &next) == SQLITE_OK else { throw failure() }
                guard let statement else { continue }
                defer { sqlite3_finalize(statement) }
                let count = Int(sqlite3_bind_parameter_count(statement))
                for (offset, argument) in remaining.prefix(count).enumerated() {
                    switch argument {
                    case .text(let text):
                        var text = text
                        _ = text.withUTF8 {
                            sqlite3_bind_text(statement, Int32(offset + 1), $0.baseAddress, Int32($0.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self))
                        }
                    case .integer(let number): sqlite3_bind_int64(statement, Int32(offset + 1), number)
                    }
                }
                remaining = remaining.dropFirst(count)
                while true {
                    let code = sqlite3_step(statement)
                    if code == SQLITE_DONE { break }
                    guard code == SQLITE_ROW else { throw failure() }
                    row(statement)
                }
            }
        }
    }

    private func column(_ statement: OpaquePointer, _ index: Int32) -> String? {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_NULL: return nil
        case SQLITE_INTEGER: return String(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT: return "\(sqlite3_column_double(statement, index))"
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, index))
            let bytes = UnsafeRawBufferPointer(start: sqlite3_column_blob(statement, index), count: count)
            return "\\x" + bytes.map { String(format: "%02x", $0) }.joined()
        default:
            let count = Int(sqlite3_column_bytes(statement, index))
            guard count > 0, let text = sqlite3_column_text(statement, index) else { return "" }
            return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
        }
    }
}
