extension StoreError {
    /// What a backend's failure means, the same on every store: what a program matches to
    /// decide what to do (try again, report the record, reconnect), where SQLite's result
    /// codes and PostgreSQL's SQLSTATEs would differ.
    public enum Reason: Sendable, Hashable {
        /// A constraint of the store's tables refused a row.
        case constraint(Constraint)
        /// The disk holding the store is full; nothing of the failed statement was written.
        case diskFull
        /// Another connection holds a lock this one needed (SQLite busy or locked, PostgreSQL
        /// lock not available): try again when it is done.
        case busy
        /// The transaction lost to a concurrent one (a serialization failure, a deadlock, a
        /// stale WAL snapshot): running it again may succeed.
        case transactionConflict
        /// The server could not be reached, or went away or ended the session: what
        /// committed stands, and a new connection may go on.
        case connectionLost
        /// The statement was cancelled or timed out (an interrupt, statement_timeout).
        case cancelled
        /// The store may not be written here (a read-only file, a read-only transaction).
        case readOnly
        /// The store's file or data is damaged.
        case corrupt
        /// Another failure of the backend: its own error says which (`.database`, `.postgres`).
        case other
    }

    /// Which kind of constraint refused a row.
    public enum Constraint: Sendable, Hashable {
        /// A unique index or primary key: the key is stored already.
        case unique
        /// A NOT NULL column without a value.
        case notNull
        /// A reference to a row that does not exist.
        case foreignKey
        /// A CHECK constraint.
        case check
        /// Another constraint (a SQLite trigger's RAISE, an exclusion constraint…).
        case other
    }

    /// What the backend's failure means on every store, or nil when the error is not a
    /// backend's failure (validation, uniqueness and merge conflicts, history… have cases
    /// of their own).
    public var reason: Reason? {
        switch self {
        case .database(_, let code): code.map(Reason.init(sqlite:)) ?? .other
        case .diskFull: .diskFull
        case .postgres(let error): error.reason
        default: nil
        }
    }

    /// Whether the failure is about the data of what was written (a constraint refused
    /// it, or the store cannot hold one of its values), not about the store: writing the
    /// same without the record at fault succeeds.
    public var isAboutData: Bool {
        switch self {
        case .validation, .uniquenessConflict: true
        case .database(_, let code):
            code.map(Reason.isAboutData(sqlite:)) ?? false
        case .postgres(let error): error.isAboutData
        default: false
        }
    }

    /// Whether the transaction lost to a concurrent one or met a lock (a deadlock, a
    /// serialization failure, a busy store): running it again may succeed.
    public var isTransactionConflict: Bool {
        reason == .transactionConflict || reason == .busy
    }

    /// The statement that failed, when the store knows it (PostgreSQL's statements; a SQLite
    /// failure keeps SQLite's message and result code only). Record values are bound as
    /// parameters, never written into it.
    public var sql: String? {
        if case .postgres(let error) = self { error.sql } else { nil }
    }

    /// The backend's own error, for what `reason` does not say (nil for SQLite, whose
    /// message and result code `.database` holds).
    public var underlying: (any Error & Sendable)? {
        if case .postgres(let error) = self { error } else { nil }
    }
}
