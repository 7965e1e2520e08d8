import Foundation
import GRDB
import GRDBSQLite

/// The history tables and the statements that write, read and purge them, on either
/// backend. One row per save in `_ingest_history`, numbered by its position; its changes
/// in `_ingest_history_changes`, one row per group of `HistoryChanges`.
enum HistoryLog {
    static let transactionsTable = "_ingest_history"
    static let changesTable = "_ingest_history_changes"
    /// The metadata key holding the position the history was purged before.
    static let purgedKey = "_historyPurgedBefore"
    /// The PostgreSQL notification channel every save with history notifies on commit.
    static let channel = "ingest_history"

    static let sqliteTables = [
        // AUTOINCREMENT: a position is never used twice, even after a purge empties the table.
        """
        CREATE TABLE IF NOT EXISTS "\(transactionsTable)" (position INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL,
            author TEXT NOT NULL, process TEXT NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS "\(changesTable)" (position INTEGER NOT NULL, seq INTEGER NOT NULL, entity TEXT NOT NULL,
            kind TEXT NOT NULL, rows TEXT NOT NULL, properties TEXT, tombstone TEXT, PRIMARY KEY (position, seq)) WITHOUT ROWID
        """,
    ]

    /// On PostgreSQL a transaction's position is its transaction ID (`xid8`, which never wraps).
    static let postgresTables = [
        """
        CREATE TABLE IF NOT EXISTS \(transactionsTable) (position bigint PRIMARY KEY, time double precision NOT NULL,
            author text NOT NULL, process text NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS \(changesTable) (position bigint NOT NULL, seq integer NOT NULL, entity text NOT NULL,
            kind text NOT NULL, rows text NOT NULL, properties text, tombstone text, PRIMARY KEY (position, seq))
        """,
    ]

    /// `host:pid`, as history transactions name their process.
    static let process = HostName.current + ":\(getpid())"

    /// Writes a history transaction and its changes in the connection's open transaction;
    /// returns its position. On PostgreSQL it also notifies `channel`, delivered on commit.
    /// - Throws: `StoreError.database` or `.postgres`.
    @discardableResult
    static func record(_ changes: HistoryChanges, author: String, on connection: StoreConnection) throws -> Int64 {
        let time = Value.double(Date.now.timeIntervalSince1970)
        let position: Int64
        switch connection.kind {
        case .sqlite(let db):
            try connection.execute("INSERT INTO \"\(transactionsTable)\" (time, author, process) VALUES (?, ?, ?)",
                                   [time, .string(author), .string(process)])
            position = sqlite3_last_insert_rowid(db.sqliteConnection)
        case .postgres:
            // Importers commit without waiting for the disk: a fetch makes what it gives durable first.
            position = try connection.int64("""
                INSERT INTO \(transactionsTable) (position, time, author, process)
                SELECT pg_current_xact_id()::text::bigint, ?, ?, ? FROM (SELECT pg_notify('\(channel)', '')) AS n RETURNING position
                """, [time, .string(author), .string(process)]) ?? 0
        }
        let rows = changes.storedRows
        // A few statements at most: each holds what stays under PostgreSQL's 65,535 parameters
        // (a cascade may delete thousands of objects, each a row with its tombstone).
        for start in stride(from: 0, to: rows.count, by: 4_000) {
            let part = rows[start..<min(rows.count, start + 4_000)]
            let placeholders = Array(repeating: "(?, ?, ?, ?, ?, ?, ?)", count: part.count).joined(separator: ", ")
            var arguments: [Value?] = []
            arguments.reserveCapacity(part.count * 7)
            for (seq, row) in zip(part.indices, part) {
                arguments += [.int(position), .int(Int64(seq)), .string(row.entity), .string(row.kind), .string(row.rows),
                              row.properties.map(Value.string), row.tombstone.map(Value.string)]
            }
            try connection.execute("INSERT INTO \(quoted(changesTable)) (position, seq, entity, kind, rows, properties, tombstone) VALUES \(placeholders)",
                                   arguments)
        }
        return position
    }

    /// Flushes a SQLite store's WAL file to the disk (what its commits wrote without waiting).
    static func flushWAL(of path: String) {
        let descriptor = open(path + "-wal", O_RDONLY)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    /// Whether the store has the history tables (a store written before them, opened for
    /// reading only, has none).
    static func exists(_ connection: StoreConnection) throws -> Bool {
        switch connection.kind {
        case .sqlite(let db): return try db.tableExists(transactionsTable)
        case .postgres:
            return try connection.int64("SELECT CASE WHEN to_regclass('\(transactionsTable)') IS NULL THEN 0 ELSE 1 END") == 1
        }
    }

    /// The history transactions `filter` selects, in position order, at most `limit`, each
    /// with its changes and the token `token` gives it.
    static func read(_ filter: String, _ arguments: [Value?], limit: Int, schema: Schema, storeID: UUID,
                     token: (Int64) -> HistoryToken, _ connection: StoreConnection) throws -> [HistoryTransaction] {
        var transactions: [HistoryTransaction] = []
        try connection.query("""
            SELECT position, time, author, process FROM \(quoted(transactionsTable)) WHERE \(filter) ORDER BY position LIMIT \(limit)
            """, arguments, cached: false) { row in
            let position = row.key(0) ?? 0
            transactions.append(HistoryTransaction(position: position, timestamp: Date(timeIntervalSince1970: row.double(1) ?? 0),
                                                   author: row.value(.string, 2)?.stringValue ?? "",
                                                   process: row.value(.string, 3)?.stringValue ?? "", changes: [],
                                                   token: token(position)))
        }
        guard let first = transactions.first, let last = transactions.last else { return [] }
        var index: [Int64: Int] = [:]
        for (offset, transaction) in transactions.enumerated() { index[transaction.position] = offset }
        var types: [String: [String: AttributeType]] = [:]
        try connection.query("""
            SELECT position, entity, kind, rows, properties, tombstone FROM \(quoted(changesTable))
            WHERE position >= ? AND position <= ? ORDER BY position, seq
            """, [.int(first.position), .int(last.position)], cached: false) { row in
            // Rows of transactions between these positions that the filter left out are skipped.
            guard let offset = index[row.key(0) ?? -1] else { return }
            guard let entity = row.value(.string, 1)?.stringValue,
                  let kind = row.value(.string, 2)?.stringValue.flatMap(HistoryChange.Kind.init(rawValue:)),
                  let text = row.value(.string, 3)?.stringValue, let rows = RowList.rows(text) else {
                throw StoreError.history("a damaged row in \(changesTable) at position \(row.key(0) ?? -1)")
            }
            let properties = row.value(.string, 4)?.stringValue.map { $0.split(separator: ",").map(String.init) } ?? []
            var tombstone: [String: Value] = [:]
            if let json = row.value(.string, 5)?.stringValue {
                if types[entity] == nil, let info = schema.entity(entity) {
                    types[entity] = Dictionary(zip(info.attributeNames, info.attributeTypes)) { a, _ in a }
                }
                tombstone = HistoryValues.values(json, types: types[entity] ?? [:])
            }
            var changes = transactions[offset].changes
            transactions[offset].changes = []
            changes.reserveCapacity(changes.count + rows.count)
            let idName = schema.entity(entity)?.rootName ?? entity
            for pk in rows {
                changes.append(HistoryChange(kind: kind, objectID: ObjectID(storeID: storeID, entityName: idName, key: .permanent(pk)),
                                             entity: entity, updatedProperties: properties, tombstone: tombstone))
            }
            transactions[offset].changes = changes
        }
        return transactions
    }
}
