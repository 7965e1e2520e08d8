import Foundation
import CSQLite

/// The history tables and the statements that write, read and purge them, on either
/// backend. One row per save in `_ingest_history`, numbered by its position; its changes
/// in `_ingest_history_changes`, one row per group of `HistoryChanges`.
enum HistoryLog {
    static let transactionsTable = "_ingest_history"
    static let changesTable = "_ingest_history_changes"
    /// The metadata key holding the position the history was purged before.
    static let purgedKey = "_historyPurgedBefore"
    /// SQLite: the metadata key holding the fingerprint of the transaction just before that position.
    static let purgedFingerprintKey = "_historyPurgedFingerprint"
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
        // Importers commit without waiting for the disk on PostgreSQL: a fetch makes what it gives durable first.
        let position = try connection.int64(connection.dialect.insertHistoryTransaction(into: transactionsTable, notifying: channel),
                                             [time, .string(author), .string(process)]) ?? 0
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
            // With the commit on PostgreSQL: a save's last writes are its history's.
            try connection.executeLater("INSERT INTO \(quoted(changesTable)) (position, seq, entity, kind, rows, properties, tombstone) VALUES \(placeholders)",
                                        arguments)
        }
        return position
    }

    /// Flushes a SQLite store's WAL file to the disk (what its commits wrote without waiting).
    static func flushWAL(of path: String) {
        let descriptor = open(path + "-wal", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    /// Whether the store has the history tables (a store written before them, opened for
    /// reading only, has none).
    static func exists(_ connection: StoreConnection) throws -> Bool {
        try connection.int64(connection.dialect.tableExists(transactionsTable)) == 1
    }

    /// The history transactions `filter` selects, in position order, at most `limit`, each
    /// with its changes and the token `token` makes of its position and fingerprint.
    static func read(_ filter: String, _ arguments: [Value?], limit: Int, schema: Schema, storeID: UUID,
                     token: (Int64, String) -> HistoryToken, _ connection: StoreConnection) throws -> [HistoryTransaction] {
        var transactions: [HistoryTransaction] = []
        try connection.query("""
            SELECT position, time, author, process FROM \(quoted(transactionsTable)) WHERE \(filter) ORDER BY position LIMIT \(limit)
            """, arguments, cached: false) { row in
            let position = row.key(0) ?? 0
            let time = row.double(1) ?? 0
            let author = row.value(.string, 2)?.stringValue ?? ""
            let process = row.value(.string, 3)?.stringValue ?? ""
            transactions.append(HistoryTransaction(position: position, timestamp: Date(timeIntervalSince1970: time),
                                                   author: author, process: process, changes: [],
                                                   token: token(position, fingerprint(time: time, author: author, process: process))))
        }
        guard let first = transactions.first, let last = transactions.last else { return [] }
        var index: [Int64: Int] = [:]
        for (offset, transaction) in transactions.enumerated() { index[transaction.position] = offset }
        var types: [String: [String: AttributeType]] = [:]
        var bounds = RowBounds(schema: schema)
        try connection.query("""
            SELECT position, entity, kind, rows, properties, tombstone FROM \(quoted(changesTable))
            WHERE position >= ? AND position <= ? ORDER BY position, seq
            """, [.int(first.position), .int(last.position)], cached: false) { row in
            // Rows of transactions between these positions that the filter left out are skipped.
            let position = row.key(0) ?? -1
            guard let offset = index[position] else { return }
            guard let entity = row.value(.string, 1)?.stringValue,
                  let kind = row.value(.string, 2)?.stringValue.flatMap(HistoryChange.Kind.init(rawValue:)),
                  let text = row.value(.string, 3)?.stringValue, let ranges = RowList.ranges(text) else {
                throw StoreError.history("a damaged row in \(changesTable) at position \(position)")
            }
            // Checked before the rows are made: a damaged range could ask for billions.
            if let damage = try bounds.damage(position: position, entity: entity, ranges: ranges, connection) {
                throw StoreError.history(damage)
            }
            let rows = ranges.lazy.flatMap { $0 }
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
            changes.reserveCapacity(changes.count + ranges.reduce(0) { $0 + Int($1.upperBound - $1.lowerBound) + 1 })
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

extension HistoryLog {
    /// What a SQLite token keeps of the history transaction before its position: a store
    /// restored from a backup has another transaction there (or none), so a fetch after
    /// the token can tell it would miss what the consumer was given since.
    static func fingerprint(time: Double, author: String, process: String) -> String {
        // FNV-1a: stable across processes and versions, unlike Hasher.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func add(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        withUnsafeBytes(of: time.bitPattern.littleEndian) { $0.forEach(add) }
        author.utf8.forEach(add)
        add(0)
        process.utf8.forEach(add)
        let folded = UInt32(truncatingIfNeeded: hash ^ (hash >> 32))
        let hex = String(folded, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }

    /// The fingerprint of the transaction at `position`, or nil when there is none.
    static func fingerprint(at position: Int64, _ connection: StoreConnection) throws -> String? {
        var found: String?
        try connection.query("SELECT time, author, process FROM \(quoted(transactionsTable)) WHERE position = ?", [.int(position)]) { row in
            found = fingerprint(time: row.double(0) ?? 0, author: row.value(.string, 1)?.stringValue ?? "",
                                process: row.value(.string, 2)?.stringValue ?? "")
        }
        return found
    }

    /// The highest row number the table of `info` has ever given: on SQLite the store's
    /// sequence (deleted rows keep theirs), on PostgreSQL the table's `_pk` sequence; and
    /// the highest row it holds, for rows written by other means.
    static func highestRow(_ info: EntityInfo, _ connection: StoreConnection) throws -> Int64 {
        let query = connection.dialect.highestRow(info, sequenceTable: PersistentStoreCoordinator.sequenceTable)
        return try connection.int64(query.sql, [query.argument]) ?? 0
    }

    /// What `status --check` reports of the history: rows that cannot be read, and rows
    /// naming row numbers their entity's table never gave (at most `limit`). Reads the
    /// changes a page at a time, so a long history costs no more memory than a short one.
    @_optimize(none)
    static func problems(schema: Schema, limit: Int = 20, _ connection: StoreConnection) throws -> [String] {
        guard try exists(connection) else { return [] }
        var problems: [String] = []
        var bounds = RowBounds(schema: schema)
        var after: (position: Int64, seq: Int64) = (-1, -1)
        while problems.count < limit {
            var count = 0
            try connection.query("""
                SELECT position, seq, entity, rows FROM \(quoted(changesTable))
                WHERE position > ? OR (position = ? AND seq > ?) ORDER BY position, seq LIMIT 10000
                """, [.int(after.position), .int(after.position), .int(after.seq)], cached: false) { row in
                count += 1
                let position = row.key(0) ?? -1
                after = (position, row.key(1) ?? -1)
                guard problems.count < limit else { return }
                guard let entity = row.value(.string, 2)?.stringValue, let text = row.value(.string, 3)?.stringValue,
                      let ranges = RowList.ranges(text) else {
                    problems.append("a damaged row in \(changesTable) at position \(position): its entity or row list cannot be read")
                    return
                }
                if let damage = try bounds.damage(position: position, entity: entity, ranges: ranges, connection) {
                    problems.append(damage)
                }
            }
            if count < 10_000 { break }
        }
        return problems
    }
}

/// The highest row number of each table a history read meets, read once per table.
struct RowBounds {
    let schema: Schema
    private var highest: [String: Int64] = [:]

    init(schema: Schema) { self.schema = schema }

    /// Why a change row listing `ranges` of `entity` at `position` is damaged, or nil when it is not.
    mutating func damage(position: Int64, entity: String, ranges: [ClosedRange<Int64>], _ connection: StoreConnection) throws -> String? {
        let place = "a damaged row in \(HistoryLog.changesTable) at position \(position)"
        guard let info = schema.entity(entity) else { return "\(place): it names \(entity), which the store's model does not have" }
        guard let last = ranges.last?.upperBound else { return nil }
        if let known = highest[info.table], last <= known { return nil }
        // Read again past the one known: a check outside a transaction (PostgreSQL's) meets
        // history committed after it read the bound, which only grows.
        let bound = try HistoryLog.highestRow(info, connection)
        highest[info.table] = bound
        guard last > bound else { return nil }
        return "\(place): it lists \(entity) row \(last), past the highest row number \(entity)'s table has given (\(bound))"
    }
}
