/// Why a PostgreSQL store refused an operation. No message holds a password.
public enum PostgresError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server could not be reached or refused the login: where, and libpq's reason.
    case connection(target: String, reason: String)
    /// A statement failed: the server's message and its SQLSTATE (`23505` is a unique violation).
    case server(String, sqlState: String)
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
        case .server(let message, let state):
            state.hasPrefix("08") || state == "57P01" || state == "57P02" || state == "57P03"
                // libpq's own words when a result never came back (no SQLSTATE with them).
                || message.contains("server closed the connection") || message.contains("no connection to the server")
        default: false
        }
    }

    public var description: String {
        switch self {
        case .connection(let target, let reason): "cannot connect to PostgreSQL at \(target): \(reason)"
        case .server(let message, let state): "PostgreSQL: \(message) (SQLSTATE \(state))"
        case .unsupported(let what): "not supported on a PostgreSQL store: \(what)"
        case .modelMismatch(let target, let reason): "the PostgreSQL store \(target) was made with a different model: \(reason)"
        case .notAStore(let target): "\(target) holds no Ingest store: nothing has been imported into it"
        case .noSchema(let target):
            "\(target) selects no schema that exists and that this role may use to make the store's tables in: create the schema or grant USAGE and CREATE on it, or correct its name in ?options=-csearch_path%3Dname"
        case .foreignTables(let target, let tables):
            "\(target) has tables Ingest did not make with the names the model needs (\(tables.joined(separator: ", "))); import into another database, or another schema (?options=-csearch_path%3Dname)"
        }
    }

    /// Whether the failure is about the data written (SQLSTATE classes 22 and 23, 54000), so a
    /// batch may be retried record by record.
    public var isAboutData: Bool {
        // 54000: a value too large for an index row (a very long text key).
        if case .server(_, let state) = self { return state.hasPrefix("22") || state.hasPrefix("23") || state == "54000" }
        return false
    }
}
