import CSQLite

/// One `BatchInserter.write`, inside the write transaction: the statements it steps, the
/// row numbers it reserved, and what it learns on the way. Each record is checked (its
/// own `invalid`, missing required values, the `reject` rule), then its rows are written
/// from the last (linked rows come after the rows linking to them): a related object
/// named by key is found or created, a described one inserted or upserted by its rule.
struct SQLiteBatchWrite {
    let inserter: BatchInserter
    let db: SQLiteDatabase
    let request: BatchInsertRequest
    let keys: [Value?]
    let resolved: [Int64]
    let contents: [UInt64]
    /// Whether the row numbers inserted and updated are listed (for a save notice or history).
    let listed: Bool
    /// Whether updates list the properties they gave (history names them).
    let history: Bool
    let statements: Statements
    var written: BatchInserter.Written
    /// Per entity, beside `written.updated`: the properties each update gave.
    var updatedProperties: [[[String]]]
    /// Row numbers handed out in one reservation per entity; unused ones leave gaps.
    var nextKey: [Int64]
    var lastKey: [Int64]
    var insertedCounts: [Int]
    /// Per plan: records' own rows written, and of those, new ones (which decides
    /// `insertsFirst` for the next batch).
    var ownRows: [Int]
    var ownRowsNew: [Int]
    /// The stored row of each row of the record being written.
    private var rowKeys: [Int64] = []

    /// The transaction's statements, per plan.
    struct Statements {
        let upserts: [SQLiteStatement]
        let plainInserts: [SQLiteStatement?]
        let creates: [SQLiteStatement]
        let lookups: [SQLiteStatement?]
        let differs: [SQLiteStatement?]
        let placeholders: [SQLiteStatement?]

        init(_ inserter: BatchInserter, _ db: SQLiteDatabase) throws {
            let plans = inserter.plans
            upserts = try inserter.statements.map { try db.cachedStatement(sql: $0.insertSQL) }
            plainInserts = try plans.indices.map { entity in
                inserter.insertsFirst[entity] ? try db.cachedStatement(sql: plans[entity].info.insertSQL) : nil
            }
            creates = try inserter.statements.map { try db.cachedStatement(sql: $0.findOrCreateSQL) }
            lookups = try plans.map { plan in try plan.info.uniqueLookupSQL.first.map { try db.cachedStatement(sql: $0) } }
            differs = try inserter.statements.map { plan in try plan.differsSQL.map { try db.cachedStatement(sql: $0) } }
            placeholders = try plans.map { plan in
                plan.rule == .keepExisting && plan.keyPosition != nil
                    ? try db.cachedStatement(sql: "SELECT 1 FROM \(plan.info.table) WHERE \"_pk\" = ? AND \(EntityInfo.placeholderColumn) IS NOT NULL")
                    : nil
            }
        }
    }

    /// Reserves the request's row numbers and readies its statements.
    init(_ inserter: BatchInserter, _ prepared: BatchInserter.Prepared, listed: Bool, history: Bool, _ db: SQLiteDatabase) throws {
        let count = inserter.plans.count
        (self.inserter, self.db, self.listed, self.history) = (inserter, db, listed, history)
        (request, keys, resolved, contents) = (prepared.request, prepared.keys, prepared.resolved, prepared.contents)
        written = BatchInserter.Written(result: BatchResult(), inserted: Array(repeating: [], count: count),
                                        updated: Array(repeating: [], count: count), learned: Array(repeating: [:], count: count),
                                        writtenFields: Array(repeating: [:], count: count), leftOut: [])
        updatedProperties = Array(repeating: [], count: count)
        if listed { written.inserted[0].reserveCapacity(request.rows.count) }
        nextKey = Array(repeating: 0, count: count)
        lastKey = Array(repeating: -1, count: count)
        insertedCounts = Array(repeating: 0, count: count)
        ownRows = Array(repeating: 0, count: count)
        ownRowsNew = Array(repeating: 0, count: count)
        var rows = Array(repeating: 0, count: count)
        for row in request.rows { rows[row.entity] += 1 }
        for (entity, count) in rows.enumerated() where count > 0 {
            nextKey[entity] = try inserter.coordinator.reserveKeys(count, for: inserter.plans[entity].info, db)
            lastKey[entity] = nextKey[entity] + Int64(count) - 1
        }
        statements = try Statements(inserter, db)
    }

    /// The stored row with `key`: made by this write, or found by the entity's unique lookup.
    func existing(_ entity: Int, _ key: Value) throws -> Int64? {
        if let pk = written.learned[entity][key] { return pk }
        guard let statement = statements.lookups[entity] else { return nil }
        defer { sqlite3_reset(statement) }
        SQLiteValues.bind(key, to: statement, at: 1)
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return sqlite3_column_int64(statement, 0)
        case SQLITE_DONE: return nil
        default: throw SQLiteValues.failure(statement, db)
        }
    }

    /// Whether row `rowIndex`'s object is stored, and (a described object kept by its rule)
    /// whether it is only a placeholder so far.
    private func presence(_ request: BatchInsertRequest, _ rowIndex: Int) throws -> BatchInsertRequest.RowPresence {
        let row = request.rows[rowIndex]
        var pk = resolved[rowIndex]
        if pk == 0 {
            guard let key = keys[rowIndex] ?? request.key(ofRow: rowIndex), let found = try existing(row.entity, key) else { return .new }
            pk = found
        }
        // Only a described object kept by its rule can be a placeholder that matters here.
        guard row.mode == .upsert, inserter.plans[row.entity].rule == .keepExisting, let statement = statements.placeholders[row.entity] else {
            return .stored
        }
        defer { sqlite3_reset(statement) }
        sqlite3_bind_int64(statement, 1, pk)
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return .placeholder
        case SQLITE_DONE: return .stored
        default: throw SQLiteValues.failure(statement, db)
        }
    }

    /// Checks record `recordIndex` of `request` (the write's own, handed in so that it is
    /// borrowed, not copied once a record beside the closures that capture the write) and
    /// writes its rows, or rejects it whole.
    mutating func writeRecord(_ recordIndex: Int, of request: BatchInsertRequest, text: UnsafeRawBufferPointer) throws {
        let range = request.rowRange(ofRecord: recordIndex)
        let unlinked = try request.unlinkedNewRows(in: range) { request, rowIndex in try presence(request, rowIndex) }
        // Closures, not `existing` itself: a method passed as a value captures a copy of the
        // whole write (every array retained), once a record.
        // The checks only when they can find something: their arguments, read from this
        // write, are retained for each call.
        if let reason = try request.records[recordIndex].invalid
            ?? (request.mayHaveProblem(in: range, skipping: unlinked)
                ? request.problem(in: range, keys: keys, skipping: unlinked, existing: { try existing($0, $1) }) : nil)
            ?? (inserter.hasRejectRule
                ? inserter.conflict(in: range, request, keys: keys, resolved: resolved, existing: { try existing($0, $1) },
                                    differs: statements.differs, text: text, db) : nil) {
            written.result.rejected.append(BatchRejection(record: request.records[recordIndex].number, reason: reason))
            written.leftOut.append(recordIndex)
            return
        }
        // A record has a few rows: zeroed in place and grown one by one, cheaper than the generic
        // removeAll and append(contentsOf:) (about 150 instructions a record between them).
        if rowKeys.count > range.count { rowKeys.removeLast(rowKeys.count - range.count) }
        for index in rowKeys.indices { rowKeys[index] = 0 }
        while rowKeys.count < range.count { rowKeys.append(0) }
        // Linked rows come after the rows linking to them: write from the last.
        for rowIndex in range.reversed() where unlinked.isEmpty || !unlinked.contains(rowIndex) {
            // Found by key, or (a related object the record repeats exactly) nothing to write.
            if resolved[rowIndex] != 0 {
                rowKeys[rowIndex - range.lowerBound] = resolved[rowIndex]
            } else if let key = keys[rowIndex] {
                try findOrCreate(rowIndex, key: key, in: range, of: request, text: text)
            } else {
                try insertOrUpsert(rowIndex, in: range, of: request, text: text)
            }
        }
        written.result.records += 1
    }

    /// A related object named by its key: found, or created with what the record gives.
    private mutating func findOrCreate(_ rowIndex: Int, key: Value, in range: Range<Int>, of request: BatchInsertRequest,
                                       text: UnsafeRawBufferPointer) throws {
        let row = request.rows[rowIndex]
        if let pk = try existing(row.entity, key) {
            rowKeys[rowIndex - range.lowerBound] = pk
            written.learned[row.entity][key] = pk
            return
        }
        let pk = nextKey[row.entity]
        nextKey[row.entity] += 1
        guard pk <= lastKey[row.entity] else { fatalError("more rows than keys reserved") }
        let statement = statements.creates[row.entity]
        inserter.bind(request, row, pk: pk, rowKeys: rowKeys, firstRow: range.lowerBound, text: text, to: statement)
        try SQLiteValues.stepToEnd(statement, db)
        // Another inserter may have made it since the lookup: its row wins.
        let made = sqlite3_changes(db.sqliteConnection) > 0
        let final = made ? pk : try existing(row.entity, key) ?? pk
        rowKeys[rowIndex - range.lowerBound] = final
        written.learned[row.entity][key] = final
        if made {
            insertedCounts[row.entity] += 1
            if listed { written.inserted[row.entity].append(pk) }
        }
    }

    /// A described object (a record's own, or a related one it describes): inserted, or
    /// upserted by its entity's rule when its key is stored.
    private mutating func insertOrUpsert(_ rowIndex: Int, in range: Range<Int>, of request: BatchInsertRequest,
                                         text: UnsafeRawBufferPointer) throws {
        let row = request.rows[rowIndex]
        let pk = nextKey[row.entity]
        nextKey[row.entity] += 1
        // Most rows of most imports are new: a plain INSERT costs SQLite less than the
        // upsert (2,400 instructions a record on the bench's feed). A row whose key is
        // stored fails it on the unique index, before anything is written, and is upserted.
        var insertedPlainly = false
        if let plain = statements.plainInserts[row.entity] {
            inserter.bind(request, row, pk: pk, rowKeys: rowKeys, firstRow: range.lowerBound, text: text, to: plain)
            let code = sqlite3_step(plain)
            if code != SQLITE_DONE && code & 0xFF != SQLITE_CONSTRAINT { throw SQLiteValues.failure(plain, db) }
            sqlite3_reset(plain)
            insertedPlainly = code == SQLITE_DONE
        }
        if !insertedPlainly {
            let statement = statements.upserts[row.entity]
            inserter.bind(request, row, pk: pk, rowKeys: rowKeys, firstRow: range.lowerBound, text: text, to: statement)
            // An upsert that updates leaves the last insert rowid alone: that tells the
            // two outcomes apart without RETURNING (which costs a temporary table per row).
            sqlite3_set_last_insert_rowid(db.sqliteConnection, 0)
            try SQLiteValues.stepToEnd(statement, db)
        }
        let changed = sqlite3_changes(db.sqliteConnection) > 0
        let own = rowIndex == range.lowerBound
        var stored = pk
        var key: Value?
        if let position = inserter.shapes[row.entity].keyPosition, sqlite3_last_insert_rowid(db.sqliteConnection) != pk || !own {
            key = request.value(request.cells[row.firstCell + position], type: inserter.plans[row.entity].info.attributeTypes[position])
        }
        if sqlite3_last_insert_rowid(db.sqliteConnection) != pk, let key {
            stored = try existing(row.entity, key) ?? pk
        }
        if let key {
            written.learned[row.entity][key] = stored
            // A record's own object may also be someone's related object: what its write gave is not hashed.
            written.writtenFields[row.entity][key] = own ? 0 : contents[rowIndex]
        }
        rowKeys[rowIndex - range.lowerBound] = stored
        if own {
            ownRows[row.entity] += 1
            if stored == pk { ownRowsNew[row.entity] += 1 }
        }
        if stored == pk {
            insertedCounts[row.entity] += 1
            if listed { written.inserted[row.entity].append(pk) }
        } else {
            if changed, listed {
                written.updated[row.entity].append(stored)
                if history { updatedProperties[row.entity].append(inserter.plans[row.entity].givenProperties(request, row: row)) }
            }
            if own { written.result.countStored(changed: changed, madeThisRun: stored >= inserter.runStart[row.entity]) }
        }
    }

    /// What the write did: its counts, and with history on, the rows it inserted and updated.
    mutating func finish() -> BatchInserter.Written {
        let plans = inserter.plans
        if history {
            for entity in plans.indices {
                written.result.history.add(plans[entity].info.name, .insert, rows: written.inserted[entity])
                for (pk, properties) in zip(written.updated[entity], updatedProperties[entity]) {
                    written.result.history.add(plans[entity].info.name, .update, row: pk, properties: properties)
                }
            }
        }
        for (entity, count) in insertedCounts.enumerated() where count > 0 { written.result.inserted[plans[entity].info.name] = count }
        return written
    }
}
