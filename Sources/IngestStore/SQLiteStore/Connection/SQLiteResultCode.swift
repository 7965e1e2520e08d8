import CSQLite

/// A SQLite result code, primary or extended, as `StoreError.database` carries it:
/// `.SQLITE_CONSTRAINT_UNIQUE`, `.SQLITE_BUSY`… Match `StoreError.reason` instead to handle
/// SQLite and PostgreSQL alike; this is for what only SQLite says.
public struct SQLiteResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The primary code of an extended one (`.SQLITE_CONSTRAINT` of `.SQLITE_CONSTRAINT_UNIQUE`).
    public var primaryResultCode: SQLiteResultCode { SQLiteResultCode(rawValue: rawValue & 0xFF) }

    /// In a `switch` or `case`, a primary code matches each of its extended codes
    /// (`case .SQLITE_CONSTRAINT:` matches `.SQLITE_CONSTRAINT_UNIQUE`), and an extended code
    /// only itself, as GRDB's `ResultCode` does.
    public static func ~= (pattern: SQLiteResultCode, code: SQLiteResultCode) -> Bool {
        pattern.primaryResultCode == pattern ? pattern == code.primaryResultCode : pattern == code
    }

    /// SQLite's own words for the code ("UNIQUE constraint failed" is the message; this is
    /// "constraint failed").
    public var description: String { "\(rawValue) (\(String(cString: sqlite3_errstr(rawValue))))" }

    public static let SQLITE_OK = SQLiteResultCode(rawValue: 0)
    public static let SQLITE_ERROR = SQLiteResultCode(rawValue: 1)
    public static let SQLITE_INTERNAL = SQLiteResultCode(rawValue: 2)
    public static let SQLITE_PERM = SQLiteResultCode(rawValue: 3)
    public static let SQLITE_ABORT = SQLiteResultCode(rawValue: 4)
    public static let SQLITE_BUSY = SQLiteResultCode(rawValue: 5)
    public static let SQLITE_LOCKED = SQLiteResultCode(rawValue: 6)
    public static let SQLITE_NOMEM = SQLiteResultCode(rawValue: 7)
    public static let SQLITE_READONLY = SQLiteResultCode(rawValue: 8)
    public static let SQLITE_INTERRUPT = SQLiteResultCode(rawValue: 9)
    public static let SQLITE_IOERR = SQLiteResultCode(rawValue: 10)
    public static let SQLITE_CORRUPT = SQLiteResultCode(rawValue: 11)
    public static let SQLITE_NOTFOUND = SQLiteResultCode(rawValue: 12)
    public static let SQLITE_FULL = SQLiteResultCode(rawValue: 13)
    public static let SQLITE_CANTOPEN = SQLiteResultCode(rawValue: 14)
    public static let SQLITE_PROTOCOL = SQLiteResultCode(rawValue: 15)
    public static let SQLITE_SCHEMA = SQLiteResultCode(rawValue: 17)
    public static let SQLITE_TOOBIG = SQLiteResultCode(rawValue: 18)
    public static let SQLITE_CONSTRAINT = SQLiteResultCode(rawValue: 19)
    public static let SQLITE_MISMATCH = SQLiteResultCode(rawValue: 20)
    public static let SQLITE_MISUSE = SQLiteResultCode(rawValue: 21)
    public static let SQLITE_AUTH = SQLiteResultCode(rawValue: 23)
    public static let SQLITE_RANGE = SQLiteResultCode(rawValue: 25)
    public static let SQLITE_NOTADB = SQLiteResultCode(rawValue: 26)

    public static let SQLITE_BUSY_SNAPSHOT = SQLiteResultCode(rawValue: 5 | (2 << 8))
    public static let SQLITE_READONLY_ROLLBACK = SQLiteResultCode(rawValue: 8 | (3 << 8))
    public static let SQLITE_CONSTRAINT_CHECK = SQLiteResultCode(rawValue: 19 | (1 << 8))
    public static let SQLITE_CONSTRAINT_FOREIGNKEY = SQLiteResultCode(rawValue: 19 | (3 << 8))
    public static let SQLITE_CONSTRAINT_NOTNULL = SQLiteResultCode(rawValue: 19 | (5 << 8))
    public static let SQLITE_CONSTRAINT_PRIMARYKEY = SQLiteResultCode(rawValue: 19 | (6 << 8))
    public static let SQLITE_CONSTRAINT_TRIGGER = SQLiteResultCode(rawValue: 19 | (7 << 8))
    public static let SQLITE_CONSTRAINT_UNIQUE = SQLiteResultCode(rawValue: 19 | (8 << 8))
}
