import Foundation

/// Writes `BatchInsertRequest`s into a PostgreSQL store: the batch path of an import
/// there, at the pace of `COPY`. A request's new rows go straight into their tables with
/// one `COPY` per entity, their row numbers reserved from the tables' sequences first, so
/// links are plain numbers and nothing is staged or looked up again. Stored rows that the
/// request may change go through a staging table to one `UPDATE … FROM` per entity, by
/// the entity's `ConflictRule` and the fields each record gives, joined on the row number.
///
/// Which keys are stored comes from one lookup per entity, except for the entities no
/// other links to (a feed's records, usually): their keys are assumed new while the
/// writer has met none stored, and a key that is stored after all (another run's, or
/// another process's) fails the `COPY`; the caller retries the transaction, and the
/// writer looks those keys up from then on.
///
/// The guarantees are the SQLite `BatchInserter`'s: the caller's transaction holds the
/// rows and whatever marker it writes; uniqueness is kept by the unique index; a record
/// whose new row lacks a required value is rejected whole with a reason in the model's
/// names; repeats of one key in a request are folded in record order, so the end state
/// is the one writing them one by one would leave. A key that another transaction inserts
/// between this writer's lookup and its insert fails the write with SQLSTATE 40001, and
/// the caller retries the transaction (unless the batch only names that object: it links
/// to the other's row).
///
/// One writer per connection (it keeps temporary staging tables there). The `reject`
/// rule is not supported yet.
package final class PostgresBatchWriter: BatchWriting {
    let connection: PostgresConnection
    let plans: [BatchEntityPlan]
    /// Per plan, what folding reads for every row (see `BatchEntityShape`).
    let shapes: [BatchEntityShape]
    let planIndex: [String: Int]
    /// Plans in write order: each after the plans its rows link to.
    let order: [Int]
    let statements: [Statements]
    /// Each entity's first row number made by this run (pk ≥ it: made by this run).
    public var firstRowOfRun: [String: Int64] = [:]
    /// Whether writes list what they change in `BatchResult.history` (on by default).
    public var recordsHistory = true
    /// Whether a save's `finish` records what its writes listed in the store's history log
    /// (on by default); off, they are listed only for the caller (a save notice).
    package var logsHistory = true

    struct Statements {
        let stage: String
        /// COPY of stored rows' changes into the staging table.
        let copy: String
        let existing: String?
        let update: String?
        /// COPY of new rows straight into the entity's table, row numbers given.
        let copyNew: String
        /// The same, the row numbers left to the table's identity: for an entity no other
        /// links to, whose new rows' numbers the client never needs (nil without attributes).
        let copyNewUnnumbered: String?
        /// For an entity others link to, whose new keys other transactions may make at the
        /// same moment: new rows go through `_new_N` and an INSERT that skips keys made
        /// meanwhile and says which it made. The batch links to such a row when it only names
        /// the object, and is tried again (40001) when it describes it.
        let stageNew: String?
        let copyStagedNew: String?
        let insertNew: String?
        /// Reserves row numbers: `$1` of them from the table's identity sequence.
        var reserve: String
        /// The identity sequence, as `oid::oid` (resolved once, in `init`).
        var sequence = ""
        let attributeCount: Int
        let linkCount: Int
        let maskWords: Int
    }

    /// Rows in one binary `COPY` statement at most: a save's new rows of an entity, when
    /// they are `piecedCopyLimit` or fewer, go in pieces of this many when the server is on
    /// this machine (`rowsPerBinaryCopy(on:)`).
    package var rowsPerBinaryCopy: Int
    /// Above this many rows one binary `COPY` creates its 1,000 slots for several rows each,
    /// and pieces would save the server less than they cost it: one statement.
    static let piecedCopyLimit = 2_000

    /// Entities no other entity links to: their keys may be assumed new (see the type's notes).
    let undestined: [Bool]
    /// Whether keys of `undestined` entities are assumed new: until one was found stored.
    public internal(set) var assumesNewKeys = true
    /// Per entity linked to: what the writer remembers of its objects by key (`Known`), so
    /// that a related object repeated as it was costs no lookup and no staged row. Bounded;
    /// what a write adds waits in `pending` until its transaction commits (`didCommit`),
    /// and only what differs from what was remembered is added. The writers of one run's
    /// workers share it (set it before the first write).
    package var known = PostgresKnownObjects()
    var pending: [[TextKey: Known]]
    /// The history position of the open transaction's save, once recorded (for `known`).
    var openPosition: Int64?
    static let knownLimit = 200_000
    /// Staging tables a write of the open transaction used. They empty on commit or
    /// rollback (ON COMMIT DELETE ROWS); another write in the same transaction (the
    /// record-by-record retry) truncates every one of them first (a rollback to a savepoint
    /// may have undone an earlier TRUNCATE). A TRUNCATE after every write cost the server a
    /// new file per table per batch.
    var usedStagingTables: Set<String> = []
    /// Per entity and to-one column: the destination's plan.
    let linkTargets: [[Int]]

    /// Other writers than those sharing `known` may have changed stored objects since the
    /// last commit it learnt from (a run's chunks commit in feed order, and the chunk before
    /// this one was another process's). With the saves in the history, the objects it says
    /// were updated or deleted since are forgotten (looked up again), and what else is
    /// remembered holds. Without it (or when that is more than `knownLimit` rows), the row
    /// numbers remembered hold (a key keeps its row) and the fields do not: an object given
    /// again as it was last written here is written again, not skipped.
    public func othersWrote() {
        guard let since = known.position, let changed = try? changedByOthers(since: since) else {
            known.othersWrote()
            return
        }
        known.forget(changed)
    }

    /// The rows of entities others link to that the history says were updated or deleted
    /// after `position`, by entity (nil: more than is worth reading one by one, or the
    /// history was purged past `position`). A run's saves commit one after another, and each
    /// takes its position (its transaction ID) after the one before committed, so every other
    /// process's save since this process's last commit is there.
    private func changedByOthers(since position: Int64) throws -> [Int: Set<Int64>]? {
        // A purge past `position` is a row without an entity: one round trip.
        let rows = try connection.execute("""
            SELECT entity, rows FROM \(quoted(HistoryLog.changesTable)) WHERE position > $1 AND kind <> 'insert'
            UNION ALL SELECT NULL, NULL FROM \(quoted(PersistentStoreCoordinator.metadataTable)) WHERE key = $2 AND value::bigint > $1
            """, [String(position), HistoryLog.purgedKey])
        var changed: [Int: Set<Int64>] = [:]
        var total = 0
        for row in 0..<rows.count {
            guard let name = rows[row, 0] else { return nil }
            guard let entity = planIndex[name], !undestined[entity] else { continue }
            guard let ranges = RowList.ranges(try rows.text(row, 1)) else { return nil }
            total += ranges.reduce(0) { $0 + Int($1.count) }
            if total > Self.knownLimit { return nil }
            for range in ranges { changed[entity, default: []].formUnion(range) }
        }
        return changed
    }

    /// The caller's transaction committed: what its writes taught holds from now on.
    public func didCommit() {
        usedStagingTables.removeAll()
        defer { openPosition = nil }
        guard pending.contains(where: { !$0.isEmpty }) else { return }
        known.merge(pending, limit: Self.knownLimit, position: openPosition)
        for entity in plans.indices where !pending[entity].isEmpty {
            pending[entity].removeAll(keepingCapacity: true)
        }
    }

    /// The caller's transaction rolled back: forget what its writes would have taught.
    public func didRollBack() {
        usedStagingTables.removeAll()
        openPosition = nil
        for entity in plans.indices where !pending[entity].isEmpty {
            pending[entity].removeAll(keepingCapacity: true)
        }
    }

    /// A writer for `store`'s model on `connection`, by `rules` per entity name.
    /// - Throws: `PostgresError.unsupported` for a rule or a model shape this path does
    ///   not write yet; `.server` when the staging tables cannot be made.
    @_optimize(none)
    package init(store: PostgresStore, connection: PostgresConnection, rules: [String: ConflictRule] = [:]) throws(PostgresError) {
        self.connection = connection
        let plans = BatchEntityPlan.plans(schema: store.schema, rules: rules)
        self.plans = plans
        shapes = plans.map(\.shape)
        let positions = Dictionary(uniqueKeysWithValues: plans.enumerated().map { ($1.info.name, $0) })
        planIndex = positions
        for plan in plans where plan.rule == .reject {
            throw .unsupported("the reject rule (onConflict of \(plan.info.name)); use update, replace or keepExisting")
        }
        // Destinations first; a cycle of to-ones cannot be written in one pass.
        var sorted: [Int] = []
        var state = Array(repeating: 0, count: plans.count)
        func visit(_ index: Int) throws(PostgresError) {
            if state[index] == 2 { return }
            if state[index] == 1 { throw .unsupported("to-one relationships that form a cycle through \(plans[index].info.name)") }
            state[index] = 1
            let info = plans[index].info
            for (relationship, _) in info.toOneColumns {
                let destination = info.relationships[relationship].destination
                guard let target = positions[destination], plans[target].keyPosition != nil else {
                    throw .unsupported("\(info.name).\(info.relationships[relationship].relationship.name) links to \(destination), which the batch path does not write (it has no single-attribute key, or contexts write it: a hierarchy's entity, a member of an ordered to-many)")
                }
                // One INSERT cannot see the rows it inserts, so a link within one entity would be lost.
                guard target != index else {
                    throw .unsupported("\(info.name).\(info.relationships[relationship].relationship.name) links \(info.name) to itself")
                }
                try visit(target)
            }
            state[index] = 2
            sorted.append(index)
        }
        for index in plans.indices { try visit(index) }
        order = sorted
        var destined = Array(repeating: false, count: plans.count)
        for plan in plans {
            for (relationship, _) in plan.info.toOneColumns {
                if let target = positions[plan.info.relationships[relationship].destination] { destined[target] = true }
            }
        }
        undestined = destined.map { !$0 }
        pending = Array(repeating: [:], count: plans.count)
        linkTargets = plans.map { plan in
            plan.info.toOneColumns.map { positions[plan.info.relationships[$0.relationship].destination]! }
        }
        var statements: [Statements] = []
        for (index, plan) in plans.enumerated() {
            var made = Self.statements(for: plan, number: index, plans: plans, planIndex: positions)
            let table = plan.info.table.replacingOccurrences(of: "'", with: "''")
            let sequence = try connection.execute("SELECT pg_get_serial_sequence('\(table)', '_pk')::regclass::oid")[0, 0] ?? "0"
            made.reserve = made.reserve.replacingOccurrences(of: "%SEQUENCE%", with: "\(sequence)::oid")
            made.sequence = "\(sequence)::oid"
            statements.append(made)
        }
        self.statements = statements
        rowsPerBinaryCopy = Self.rowsPerBinaryCopy(on: connection)
        for statement in statements {
            try connection.execute(statement.stage)
            if let stageNew = statement.stageNew { try connection.execute(stageNew) }
        }
        // The staging tables are temporary, never analysed: the planner takes them for 720
        // rows, and an index probe for an uncached page. A save's few staged rows were joined
        // to the whole table by hashing it (2.5–4.7 ms a save with 10,000 photographers,
        // growing with the table) where a probe a staged row takes 0.3 ms; with the table's
        // statistics right it still hashed. The connection runs only the writer's and its
        // chunk's statements, whose joins are all such probes.
        try connection.execute("SELECT set_config('enable_hashjoin', 'off', false), set_config('enable_mergejoin', 'off', false)")
    }

    /// How many rows a binary `COPY` of at most `piecedCopyLimit` rows takes in one statement
    /// on `connection`: 250 when the server is on this machine, else all of them.
    /// `INGEST_POSTGRES_COPY_ROWS` sets it (0: one statement), for measuring.
    ///
    /// A piece costs a round trip, a statement and the server's waking for it; it saves the
    /// server the slots a `COPY` of up to 1,000 rows otherwise registers, one a row (see
    /// `PostgresConnection.copyIn(_:rows:rowsPerStatement:write:)`): about a millisecond of
    /// its CPU a 1,000-row save. Over a network the waiting costs more than that. (Timing
    /// a round trip when the writer starts chose wrongly: the split loads both cores then.)
    @_optimize(none)
    static func rowsPerBinaryCopy(on connection: PostgresConnection) -> Int {
        if let text = ProcessInfo.processInfo.environment["INGEST_POSTGRES_COPY_ROWS"], let rows = Int(text), rows >= 0 {
            return rows == 0 ? Int.max : rows
        }
        return connection.isLocal ? 250 : Int.max
    }

    public func entityIndex(_ entity: String) -> Int? { planIndex[entity] }

    public func toOneIndex(_ relationship: String, of entity: Int) -> Int? {
        let info = plans[entity].info
        guard let index = info.relationshipIndex[relationship] else { return nil }
        return info.toOneColumns.firstIndex { $0.relationship == index }
    }

    public func makeRequest(text: [UInt8]) -> BatchInsertRequest {
        BatchInsertRequest(plans: plans, text: text)
    }

    // MARK: - Statements

    @_optimize(none)
    private static func statements(for plan: BatchEntityPlan, number: Int, plans: [BatchEntityPlan],
                                   planIndex: [String: Int]) -> Statements {
        let info = plan.info
        let stage = quoted("_stage_\(number)")
        let attributeCount = info.attributes.count
        let linkCount = info.toOneColumns.count
        // Stored rows' changes: the row number, the cells, the links (row numbers), the given-mask.
        var stagingColumns = ["_rec integer", "_pk bigint"]
        stagingColumns += info.attributeTypes.enumerated().map { "c\($0) \($1.stagingType)" }
        stagingColumns += (0..<linkCount).map { "l\($0) bigint" }
        stagingColumns += (0..<plan.maskWords).map { "m\($0) bigint" }
        let create = "CREATE TEMP TABLE IF NOT EXISTS \(stage) (\(stagingColumns.joined(separator: ", "))) ON COMMIT DELETE ROWS"
        let copyColumns = ["_rec", "_pk"] + (0..<attributeCount).map { "c\($0)" } + (0..<linkCount).map { "l\($0)" }
            + (0..<plan.maskWords).map { "m\($0)" }
        let copy = "COPY \(stage) (\(copyColumns.joined(separator: ", "))) FROM STDIN"

        func attribute(_ position: Int) -> String { info.attributeTypes[position].fromStaging("s.c\(position)") }
        let columns = info.attributeNames.map(quoted) + info.toOneColumns.map { quoted($0.column) }
        let values = (0..<attributeCount).map(attribute) + (0..<linkCount).map { "s.l\($0)" }
        let copyNew = "COPY \(info.table) (\"_pk\", \(columns.joined(separator: ", "))) FROM STDIN"
        let copyNewUnnumbered = attributeCount > 0 ? "COPY \(info.table) (\(columns.joined(separator: ", "))) FROM STDIN" : nil
        // The sequence is named once (see `init`): pg_get_serial_sequence per row cost 4 µs a row.
        let reserve = "SELECT nextval(%SEQUENCE%) FROM generate_series(1, $1::integer)"
        var existing: String?
        if let key = plan.keyPosition {
            let keyColumn = quoted(info.attributeNames[key])
            let type = info.attributeTypes[key]
            switch type {
            case .string, .int64:
                // `= ANY` probes the unique index once a key; a join with unnest was planned as a
                // scan of the whole table per batch once the table was large.
                existing = "SELECT t.\(keyColumn)::text, t.\"_pk\", t.\(EntityInfo.placeholderColumn) IS NOT NULL FROM \(info.table) t WHERE t.\(keyColumn) = ANY($1::\(type == .string ? "text" : "bigint")[])"
            default:
                existing = "SELECT u.k, t.\"_pk\", t.\(EntityInfo.placeholderColumn) IS NOT NULL FROM unnest($1::text[]) AS u(k) JOIN \(info.table) t ON t.\(keyColumn) = "
                    + type.fromStaging("u.k::\(type.stagingType)")
            }
        }
        func given(_ bit: Int) -> String { "((s.m\(bit / 64) >> \(bit % 64)) & 1) = 1" }
        let changing = columns.indices.filter { $0 != plan.keyPosition }
        var update: String?
        if !changing.isEmpty {
            // Lineage is written, not compared: a row whose other fields are all the same keeps it.
            // Every staged row comes from a row that describes its object: a placeholder is
            // filled and unmarked. Under keepExisting only a placeholder is written (the writer
            // may remember one that another writer filled since).
            let placeholder = "t.\(EntityInfo.placeholderColumn) IS NOT NULL"
            let condition = plan.rule == .keepExisting ? placeholder
                : "(" + (changing.filter { !info.isLineage($0) }.map { "(\(given($0)) AND t.\(columns[$0]) IS DISTINCT FROM \(values[$0]))" }
                         + [placeholder]).joined(separator: " OR ") + ")"
            update = "UPDATE \(info.table) AS t SET "
                + (changing.map { "\(columns[$0]) = CASE WHEN \(given($0)) THEN \(values[$0]) ELSE t.\(columns[$0]) END" }
                   + ["\(EntityInfo.placeholderColumn) = NULL"]).joined(separator: ", ")
                + " FROM \(stage) s WHERE t.\"_pk\" = s._pk AND \(condition) RETURNING s._rec, s._pk"
        }
        var stageNew: String?
        var copyStagedNew: String?
        var insertNew: String?
        if let key = plan.keyPosition {
            let newStage = quoted("_new_\(number)")
            let all = "\"_pk\", " + columns.joined(separator: ", ")
            stageNew = "CREATE TEMP TABLE IF NOT EXISTS \(newStage) (LIKE \(info.table)) ON COMMIT DELETE ROWS"
            copyStagedNew = "COPY \(newStage) (\(all)) FROM STDIN"
            let keyColumn = quoted(info.attributeNames[key])
            insertNew = "INSERT INTO \(info.table) (\(all)) SELECT \(all) FROM \(newStage) ORDER BY \(keyColumn) "
                + "ON CONFLICT (\(keyColumn)) DO NOTHING RETURNING \(keyColumn)::text, \"_pk\""
        }
        return Statements(stage: create, copy: copy, existing: existing, update: update, copyNew: copyNew,
                          copyNewUnnumbered: copyNewUnnumbered,
                          stageNew: stageNew, copyStagedNew: copyStagedNew, insertNew: insertNew, reserve: reserve,
                          attributeCount: attributeCount, linkCount: linkCount, maskWords: plan.maskWords)
    }
}

extension PostgresBatchWriter {
    /// Records a history transaction of `changes` by `author` in the connection's open
    /// transaction (a save's last writes: it notifies history followers on commit).
    /// - Throws: `StoreError.postgres` when the server refuses it.
    package func recordHistory(_ changes: HistoryChanges, author: String) throws {
        openPosition = try HistoryLog.record(changes, author: author, on: StoreConnection(kind: .postgres(connection)))
    }

    /// Records what `result` (and the writes merged into it) changed as one history
    /// transaction by `author`, in the connection's open transaction: a caller of `write`
    /// outside Ingest's importer does this once per transaction, before it commits.
    /// - Throws: `StoreError.postgres` when the server refuses it.
    public func recordHistory(of result: BatchResult, author: String) throws {
        guard recordsHistory, !result.history.isEmpty else { return }
        try recordHistory(result.history, author: author)
    }
}
