public import Foundation

/// Why a PostgreSQL store refused an operation. No message holds a password.
public enum PostgresError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    /// The server could not be reached or refused the login: where, and libpq's reason.
    case connection(target: String, reason: String)
    /// A statement failed: the server's message, its SQLSTATE (match it with the named codes,
    /// `.uniqueViolation`…), and the statement when known (not in the description).
    case server(String, sqlState: SQLState, sql: String? = nil)
    /// The server answered a statement with a value Ingest cannot read where it reads one
    /// (NULL, or text that is no number, after a schema changed by hand, say): the
    /// statement, where in its result, what was expected and what was found (nil for NULL).
    case unexpectedResult(sql: String, row: Int, column: Int, expected: String, found: String?)
    /// The store or the pipeline needs something the PostgreSQL store does not do yet.
    case unsupported(String)
    /// The database holds another model's tables, or tables Ingest did not make.
    case modelMismatch(target: String, reason: String)
    /// The database holds no Ingest store (nothing was imported into it).
    case notAStore(target: String)
    /// The database (or schema) holds tables of the model's names that Ingest did not make.
    case foreignTables(target: String, tables: [String])
    /// The connection's search_path names no schema that exists and the role may use: nowhere to make tables.
    case noSchema(target: String)

    /// The server went away or ended the session (restart, shutdown, network): the
    /// work that committed stands, and a new connection may go on.
    public var isConnectionLoss: Bool {
        switch self {
        case .connection: true
        // libpq's own report of a lost server carries no SQLSTATE: `PostgresRows` gives it
        // `.connectionFailure` from the connection's status.
        case .server(_, let state, _):
            state.isInClass(.connectionException) || [.adminShutdown, .crashShutdown, .cannotConnectNow].contains(state)
        default: false
        }
    }

    public var description: String {
        switch self {
        case .connection(let target, let reason): "cannot connect to PostgreSQL at \(target): \(reason)"
        case .server(let message, let state, _): "PostgreSQL: \(message) (SQLSTATE \(state))"
        case .unexpectedResult(let sql, let row, let column, let expected, let found):
            "PostgreSQL answered \(found.map { "\"\($0.prefix(40))\"" } ?? "NULL") where \(expected) was expected "
                + "(row \(row + 1), column \(column + 1) of \(sql.prefix(120)))"
        case .unsupported(let what): "not supported on a PostgreSQL store: \(what)"
        case .modelMismatch(let target, let reason): "the PostgreSQL store \(target) was made with a different model: \(reason)"
        case .notAStore(let target): "\(target) holds no Ingest store: nothing has been imported into it"
        case .noSchema(let target):
            "\(target) selects no schema that exists and that this role may use to make the store's tables in: create the schema or grant USAGE and CREATE on it, or correct its name in ?options=-csearch_path%3Dname"
        case .foreignTables(let target, let tables):
            "\(target) has tables Ingest did not make with the names the model needs (\(tables.joined(separator: ", "))); import into another database, or another schema (?options=-csearch_path%3Dname)"
        }
    }

    public var errorDescription: String? { description }

    /// Whether the failure is about the data written (SQLSTATE classes 22 and 23, 54000), so a
    /// batch may be retried record by record.
    public var isAboutData: Bool {
        guard let state = sqlState else { return false }
        // 54000: a value too large for an index row (a very long text key).
        return state.isInClass(.dataException) || state.isInClass(.integrityConstraintViolation) || state == .programLimitExceeded
    }

    /// Whether the transaction lost to a concurrent one or met a lock (a serialization
    /// failure, a deadlock, a lock wait past `lock_timeout`, an object in use) and running it
    /// again may succeed: as `StoreError.isTransactionConflict` says of the same failure.
    public var isTransactionConflict: Bool {
        reason == .transactionConflict || reason == .busy
    }
}
