extension StoreError.Reason {
    /// What SQLite's extended result `code` means on every store.
    init(sqlite code: SQLiteResultCode) {
        switch code {
        case .SQLITE_CONSTRAINT_UNIQUE, .SQLITE_CONSTRAINT_PRIMARYKEY: self = .constraint(.unique)
        case .SQLITE_CONSTRAINT_NOTNULL: self = .constraint(.notNull)
        case .SQLITE_CONSTRAINT_FOREIGNKEY: self = .constraint(.foreignKey)
        case .SQLITE_CONSTRAINT_CHECK: self = .constraint(.check)
        // A WAL read snapshot too old to write from: the transaction must start again.
        case .SQLITE_BUSY_SNAPSHOT: self = .transactionConflict
        default:
            switch code.primaryResultCode {
            case .SQLITE_CONSTRAINT: self = .constraint(.other)
            case .SQLITE_FULL: self = .diskFull
            case .SQLITE_BUSY, .SQLITE_LOCKED: self = .busy
            case .SQLITE_INTERRUPT: self = .cancelled
            case .SQLITE_READONLY: self = .readOnly
            case .SQLITE_CORRUPT, .SQLITE_NOTADB: self = .corrupt
            default: self = .other
            }
        }
    }

    /// Whether SQLite's `code` is about the data written: a constraint, a text or blob over
    /// SQLite's length limit, a value of the wrong type for a strict column.
    static func isAboutData(sqlite code: SQLiteResultCode) -> Bool {
        [.SQLITE_CONSTRAINT, .SQLITE_TOOBIG, .SQLITE_MISMATCH, .SQLITE_RANGE].contains(code.primaryResultCode)
    }
}
