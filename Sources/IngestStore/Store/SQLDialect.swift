/// Which SQL a statement is written in, and the statements whose spelling differs by more
/// than a word between the two (shorter differences are spelled where they are used).
enum SQLDialect: Sendable {
    case sqlite, postgres

    /// Appended to a SELECT whose rows the transaction then changes: locked until it ends
    /// on PostgreSQL; SQLite's one writer holds the whole store already.
    var rowLock: String {
        self == .postgres ? " FOR UPDATE" : ""
    }

    /// One row, 1 or 0: whether the table `name` (unquoted) exists.
    func tableExists(_ name: String) -> String {
        switch self {
        case .sqlite: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '\(name)'"
        case .postgres: "SELECT CASE WHEN to_regclass('\(name)') IS NULL THEN 0 ELSE 1 END"
        }
    }

    /// Inserts a history transaction (time, author, process) and returns its position. On
    /// PostgreSQL the position is the transaction's ID, and `channel` is notified on commit.
    func insertHistoryTransaction(into table: String, notifying channel: String) -> String {
        switch self {
        case .sqlite:
            "INSERT INTO \(quoted(table)) (time, author, process) VALUES (?, ?, ?) RETURNING position"
        case .postgres:
            """
            INSERT INTO \(table) (position, time, author, process)
            SELECT pg_current_xact_id()::text::bigint, ?, ?, ? FROM (SELECT pg_notify('\(channel)', '')) AS n RETURNING position
            """
        }
    }

    /// The highest row number the table of `info` has ever given (one argument: on SQLite
    /// the entity's root name, on PostgreSQL the table), and the highest it holds: on SQLite
    /// the store's sequence (deleted rows keep theirs), on PostgreSQL the `_pk` sequence,
    /// which a reader without rights on it does without.
    func highestRow(_ info: EntityInfo, sequenceTable: String) -> (sql: String, argument: Value) {
        switch self {
        case .sqlite:
            ("""
            SELECT max(coalesce((SELECT next - 1 FROM \(quoted(sequenceTable)) WHERE entity = ?), 0),
                       coalesce((SELECT max("_pk") FROM \(info.table)), 0))
            """, .string(info.rootName))
        case .postgres:
            ("""
            SELECT coalesce(greatest((SELECT max("_pk") FROM \(info.table)),
                (SELECT CASE WHEN has_sequence_privilege(s::oid, 'SELECT,USAGE') THEN pg_sequence_last_value(s) END
                 FROM (SELECT CAST(pg_get_serial_sequence(?, '_pk') AS regclass) AS s) AS q WHERE s IS NOT NULL)), 0)
            """, .string(info.table))
        }
    }
}
