import Dispatch
import Foundation
import CSQLite

/// Writes `BatchInsertRequest`s: the bulk path of the store, for imports (Core Data's
/// `NSBatchInsertRequest`). One inserter belongs to one worker; the inserters of a
/// coordinator share a bounded cache from related objects' keys to their rows
/// (`KeyCache`), so most related objects cost no query at all.
///
/// What holds on this path as on a context's save: every row of a request and its
/// metadata commit in ONE transaction; uniqueness is kept by the store's unique index
/// (`ON CONFLICT`), so concurrent inserters never make two rows with one key; required
/// attributes and value types are checked, and a record that fails is rejected whole
/// (none of its rows written) with a reason in the model's names; relationships are
/// set both ways (the to-many side of a one-to-many is the to-one's column); and the
/// coordinator's observers get a `SaveNotice` with the object IDs inserted and updated,
/// so main contexts merge these saves as any other.
package final class BatchInserter: BatchWriting {
    package let coordinator: PersistentStoreCoordinator
    let plans: [BatchEntityPlan]
    /// Per plan, its statements in SQLite's words.
    let statements: [Statements]
    /// Whether an entity's rule is `reject` (then each record is checked against the store).
    let hasRejectRule: Bool
    /// Per plan, what binding and writing read for every row (see `BatchEntityShape`).
    let shapes: [BatchEntityShape]
    private let planIndex: [String: Int]

    /// Rows this run's records found already written by earlier records of the same run:
    /// set it to `coordinator.nextRowNumbers()` taken when the run began.
    package var firstRowOfRun: [String: Int64] = [:] {
        didSet { runStart = plans.map { firstRowOfRun[$0.info.name] ?? .max } }
    }
    private(set) var runStart: [Int64] = []
    /// Per plan, whether a record's own row is first tried with a plain INSERT (see
    /// `write`): while nearly all of them are new, as in a first import.
    var insertsFirst: [Bool] = []
    /// The open transaction's connection (set inside `inTransaction` only).
    var database: SQLiteDatabase?
    /// What the open transaction's writes did, for the key cache and the save notice once it commits.
    var open = OpenWrites()

    /// An inserter for the entities of `coordinator`'s model that `supports(_:in:)` accepts,
    /// writing stored objects by `rules` (per entity name; `update` where none is given).
    package init(coordinator: PersistentStoreCoordinator, rules: [String: ConflictRule] = [:]) {
        self.coordinator = coordinator
        let plans = BatchEntityPlan.plans(schema: coordinator.schema, rules: rules)
        self.plans = plans
        statements = plans.map(Statements.init)
        hasRejectRule = plans.contains { $0.rule == .reject }
        shapes = plans.map(\.shape)
        planIndex = Dictionary(uniqueKeysWithValues: plans.enumerated().map { ($1.info.name, $0) })
        runStart = Array(repeating: .max, count: plans.count)
        insertsFirst = plans.map { !$0.info.uniquenessConstraints.isEmpty }
    }

    /// The index of `entity` for `BatchInsertRequest.addRow`, or nil when the batch path
    /// cannot write it (see `supports(_:in:)`).
    package func entityIndex(_ entity: String) -> Int? { planIndex[entity] }

    /// The index of the to-one `relationship` of `entity` for `BatchInsertRequest.link`.
    package func toOneIndex(_ relationship: String, of entity: Int) -> Int? {
        let info = plans[entity].info
        guard let index = info.relationshipIndex[relationship] else { return nil }
        return info.toOneColumns.firstIndex { $0.relationship == index }
    }

    /// An empty request for this inserter's entities, reading text cells from `text`.
    package func makeRequest(text: [UInt8] = []) -> BatchInsertRequest {
        BatchInsertRequest(plans: plans, text: text)
    }

    /// A record the inserter rejected (the batch path's `BatchRejection`).
    package typealias Rejection = BatchRejection
    /// What one `execute` wrote (the batch path's `BatchResult`).
    package typealias Result = BatchResult

    /// A request with its related objects' keys looked up (`prepare`), ready to execute.
    package struct Prepared: Sendable {
        let request: BatchInsertRequest
        let resolved: [Int64]
        let keys: [Value?]
        let contents: [UInt64]
    }

    /// Looks up the rows of the related objects `request` names (key cache, then a
    /// reader), with no write lock: a worker prepares a chunk's batches while another
    /// worker's are being written.
    /// - Throws: `StoreError` when the store cannot be read.
    package func prepare(_ request: BatchInsertRequest) throws -> Prepared {
        let (resolved, keys, contents) = try resolve(request)
        return Prepared(request: request, resolved: resolved, keys: keys, contents: contents)
    }

    /// Writes `request` and `metadata` in one transaction. Records that cannot be
    /// written (a row to create lacks a required value) are left out whole and handed to
    /// `rejected`, whose metadata entries commit in the same transaction.
    /// - Throws: `StoreError.diskFull` or `.database` when SQLite fails (nothing is
    ///   written); whatever `rejected` throws.
    package func execute(_ request: BatchInsertRequest, metadata: [String: String],
                        rejected: (Rejection) throws -> [String: String] = { _ in [:] }) throws -> Result {
        try execute(try prepare(request), metadata: metadata, rejected: rejected)
    }

    /// Writes a prepared request (see `execute(_:metadata:rejected:)`) as one `BatchSave`.
    /// Related objects repeated exactly since their last write are not written again.
    /// `written` adds metadata made from what the write did, in the same transaction.
    ///
    /// The store's history records the write as one transaction by `author`.
    package func execute(_ prepared: Prepared, metadata: [String: String], author: String = "batch insert",
                        rejected: (Rejection) throws -> [String: String] = { _ in [:] },
                        written: (Result) throws -> [String: String] = { _ in [:] }) throws -> Result {
        try BatchSave(self).run(prepared, author: author, after: { result in
            var entries = metadata
            for rejection in result.rejected { entries.merge(try rejected(rejection)) { $1 } }
            entries.merge(try written(result)) { $1 }
            return entries
        })
    }

    // MARK: - The transaction

    /// Writes the rows of `prepared` (of its records `only`) in the open transaction on
    /// `db`: one `SQLiteBatchWrite`.
    func write(_ prepared: Prepared, only: [Int]?, observed: Bool, history: Bool, _ db: SQLiteDatabase) throws -> Written {
        var write = try SQLiteBatchWrite(self, prepared, listed: observed || history, history: history, db)
        defer {
            for entity in plans.indices where write.ownRows[entity] > 0 && !plans[entity].info.uniquenessConstraints.isEmpty {
                insertsFirst[entity] = write.ownRowsNew[entity] * 8 >= write.ownRows[entity] * 7
            }
        }
        let request = prepared.request
        try request.text.withUnsafeBytes { text in
            for recordIndex in only ?? Array(request.records.indices) { try write.writeRecord(recordIndex, of: request, text: text) }
        }
        return write.finish()
    }

    /// What a write transaction did, handed out of the lock.
    struct Written {
        var result: Result
        var inserted: [[Int64]]
        var updated: [[Int64]]
        var learned: [[Value: Int64]]
        var writtenFields: [[Value: UInt64]]
        /// Records not written (rejected), by index in the request.
        var leftOut: [Int]
    }

    /// Under the `reject` rule: why the record is rejected (an object it describes is
    /// stored with other values), or nil.
    func conflict(in range: Range<Int>, _ request: BatchInsertRequest, keys: [Value?], resolved: [Int64],
                          existing: (Int, Value) throws -> Int64?,
                          differs: [SQLiteStatement?], text: UnsafeRawBufferPointer, _ db: SQLiteDatabase) throws -> String? {
        guard hasRejectRule else { return nil }
        // Each row's stored row number, or -1 for a row that would be new: a link to it differs from any stored link.
        var stored = [Int64](repeating: -1, count: range.count)
        for rowIndex in range {
            if resolved[rowIndex] != 0 {
                stored[rowIndex - range.lowerBound] = resolved[rowIndex]
            } else if let key = keys[rowIndex] ?? request.key(ofRow: rowIndex), let pk = try existing(request.rows[rowIndex].entity, key) {
                stored[rowIndex - range.lowerBound] = pk
            }
        }
        for rowIndex in range {
            let row = request.rows[rowIndex]
            let plan = plans[row.entity]
            guard row.mode == .upsert, let statement = differs[row.entity], let position = plan.keyPosition,
                  let key = request.value(request.cells[row.firstCell + position], type: plan.info.attributeTypes[position]),
                  let pk = try existing(row.entity, key) else { continue }
            bind(request, row, pk: pk, rowKeys: stored, firstRow: range.lowerBound, text: text, to: statement)
            defer { sqlite3_reset(statement) }
            switch sqlite3_step(statement) {
            case SQLITE_ROW:
                let fields = statements[row.entity].differsColumns
                guard let first = fields.indices.first(where: { sqlite3_column_int64(statement, Int32($0)) != 0 }) else { continue }
                let column = Int32(fields.count + first)
                switch fields[first] {
                case .attribute(let position):
                    let type = plan.info.attributeTypes[position]
                    return ConflictRule.rejectReason(entity: plan.info.name, key: key.description, field: plan.info.attributeNames[position],
                                                     stored: SQLiteValues.read(type, from: statement, at: column),
                                                     given: request.value(request.cells[row.firstCell + position], type: type))
                case .link(let link):
                    let relationship = plan.info.relationships[plan.info.toOneColumns[link].relationship].relationship.name
                    return ConflictRule.rejectReason(entity: plan.info.name, key: key.description, relationship: relationship)
                }
            case SQLITE_DONE: continue
            default: throw SQLiteValues.failure(statement, db)
            }
        }
        return nil
    }

    func bind(_ request: BatchInsertRequest, _ row: BatchInsertRequest.Row, pk: Int64, rowKeys: [Int64], firstRow: Int,
                      text: UnsafeRawBufferPointer, to statement: SQLiteStatement, links: Bool = true) {
        sqlite3_bind_int64(statement, 1, pk)
        var index: Int32 = 2
        for position in 0..<shapes[row.entity].attributes {
            switch request.cells[row.firstCell + position] {
            case .null: sqlite3_bind_null(statement, index)
            case .int(let number): sqlite3_bind_int64(statement, index, number)
            case .double(let number): sqlite3_bind_double(statement, index, number)
            case .text(let offset, let count):
                // The request's bytes outlive the step: SQLite may read them in place.
                sqlite3_bind_text(statement, index, text.baseAddress!.advanced(by: Int(offset)).assumingMemoryBound(to: CChar.self),
                                  count, nil)
            case .value(let value): SQLiteValues.bind(request.values[Int(value)], to: statement, at: index)
            }
            index += 1
        }
        for link in 0..<shapes[row.entity].toOnes {
            let target = request.links[row.firstLink + link]
            if links, target >= 0 { sqlite3_bind_int64(statement, index, rowKeys[Int(target) - firstRow]) } else { sqlite3_bind_null(statement, index) }
            index += 1
        }
        for word in 0..<shapes[row.entity].maskWords {
            sqlite3_bind_int64(statement, index, Int64(bitPattern: request.masks[row.firstMask + word]))
            index += 1
        }
    }
}
