extension PostgresError {
    /// A PostgreSQL error code (SQLSTATE): five characters, the first two its class.
    /// Match it by name instead of by its digits:
    ///
    /// ```swift
    /// catch let error as PostgresError where error.sqlState == .lockNotAvailable { … }
    /// ```
    ///
    /// The codes Ingest reacts to have names here; any other code the server sends is kept
    /// as it came (`SQLState(rawValue: "42P01")`). PostgreSQL's appendix "PostgreSQL Error
    /// Codes" lists them all.
    public struct SQLState: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        public let rawValue: String

        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { rawValue = value }

        /// The class of the code: its first two characters followed by `000`
        /// (`.uniqueViolation.errorClass` is `.integrityConstraintViolation`).
        public var errorClass: SQLState { SQLState(rawValue: String(rawValue.prefix(2)) + "000") }

        /// Whether the code is of `errorClass`'s class (`.uniqueViolation.isInClass(.integrityConstraintViolation)`).
        public func isInClass(_ errorClass: SQLState) -> Bool { rawValue.prefix(2) == errorClass.rawValue.prefix(2) }

        public var description: String { rawValue }

        // MARK: - Classes

        /// Class 08: the connection failed or was lost.
        public static let connectionException: SQLState = "08000"
        /// Class 22: a value the statement cannot take (too long, out of range, not a number…).
        public static let dataException: SQLState = "22000"
        /// Class 23: a constraint of the table refused the row.
        public static let integrityConstraintViolation: SQLState = "23000"
        /// Class 40: the transaction was rolled back; running it again may succeed.
        public static let transactionRollback: SQLState = "40000"

        // MARK: - Codes

        /// The connection to the server broke (libpq's report of a lost server carries this).
        public static let connectionFailure: SQLState = "08006"
        /// A value breaks a NOT NULL constraint.
        public static let notNullViolation: SQLState = "23502"
        /// A row's reference breaks a foreign key constraint.
        public static let foreignKeyViolation: SQLState = "23503"
        /// A key value breaks a unique constraint (or a primary key).
        public static let uniqueViolation: SQLState = "23505"
        /// A value breaks a CHECK constraint.
        public static let checkViolation: SQLState = "23514"
        /// A row breaks an exclusion constraint.
        public static let exclusionViolation: SQLState = "23P01"
        /// A statement was made in a read-only transaction (a hot standby, say).
        public static let readOnlySQLTransaction: SQLState = "25006"
        /// The search_path names no schema that exists.
        public static let invalidSchemaName: SQLState = "3F000"
        /// A serializable transaction lost to a concurrent one: run it again.
        public static let serializationFailure: SQLState = "40001"
        /// The server broke a deadlock by rolling this transaction back: run it again.
        public static let deadlockDetected: SQLState = "40P01"
        /// The disk holding the database is full.
        public static let diskFull: SQLState = "53100"
        /// The server ran out of memory.
        public static let outOfMemory: SQLState = "53200"
        /// The server takes no more connections.
        public static let tooManyConnections: SQLState = "53300"
        /// A value too large for the server's limits (a very long text key in an index row).
        public static let programLimitExceeded: SQLState = "54000"
        /// A lock asked for with NOWAIT (or within lock_timeout) is held by another session.
        public static let lockNotAvailable: SQLState = "55P03"
        /// The object is in use by another session.
        public static let objectInUse: SQLState = "55006"
        /// The statement was cancelled: statement_timeout, or a cancel request.
        public static let queryCanceled: SQLState = "57014"
        /// An administrator ended the session (pg_terminate_backend, a fast shutdown).
        public static let adminShutdown: SQLState = "57P01"
        /// The server crashed and ended every session.
        public static let crashShutdown: SQLState = "57P02"
        /// The server is starting or shutting down and takes no connections now.
        public static let cannotConnectNow: SQLState = "57P03"
        /// An internal error: also what Ingest reports for a failure without a code of its own.
        public static let internalError: SQLState = "XX000"
        /// Stored data is damaged: also what Ingest reports for its own tables' rows it cannot read.
        public static let dataCorrupted: SQLState = "XX001"
        /// An index is damaged.
        public static let indexCorrupted: SQLState = "XX002"
    }

    /// The SQLSTATE of a statement the server refused (nil for the other failures).
    public var sqlState: SQLState? {
        if case .server(_, let state, _) = self { state } else { nil }
    }

    /// The statement the server refused, or answered unexpectedly, when known. Record values
    /// are bound as parameters, never written into it.
    public var sql: String? {
        switch self {
        case .server(_, _, let sql): sql
        case .unexpectedResult(let sql, _, _, _, _): sql
        default: nil
        }
    }
}

extension PostgresError {
    /// What the failure means on every store (`StoreError.reason`), or nil for the
    /// failures that are not a statement's or a connection's (a foreign schema, say).
    public var reason: StoreError.Reason? {
        if isConnectionLoss { return .connectionLost }
        if case .unexpectedResult = self { return .corrupt }
        guard let state = sqlState else { return nil }
        switch state {
        case .uniqueViolation: return .constraint(.unique)
        case .notNullViolation: return .constraint(.notNull)
        case .foreignKeyViolation: return .constraint(.foreignKey)
        case .checkViolation: return .constraint(.check)
        case _ where state.isInClass(.integrityConstraintViolation): return .constraint(.other)
        case .diskFull: return .diskFull
        case .lockNotAvailable, .objectInUse: return .busy
        case .serializationFailure, .deadlockDetected: return .transactionConflict
        case .queryCanceled: return .cancelled
        case .readOnlySQLTransaction: return .readOnly
        case .dataCorrupted, .indexCorrupted: return .corrupt
        default: return .other
        }
    }
}
