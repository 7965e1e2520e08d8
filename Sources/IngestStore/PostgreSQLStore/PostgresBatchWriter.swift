import Foundation

/// Writes `BatchInsertRequest`s into a PostgreSQL store: the batch path of an import
/// there. Each request goes to staging tables with one `COPY` per entity, then into the
/// entity tables with one `UPDATE … FROM` (stored rows, by the entity's `ConflictRule`,
/// from the fields each record gives) and one `INSERT … SELECT … ON CONFLICT DO NOTHING`
/// (new rows), destinations before the rows that link to them.
///
/// The guarantees are the SQLite `BatchInserter`'s: the caller's transaction holds the
/// rows and whatever marker it writes; uniqueness is kept by the unique index; a record
/// whose new row lacks a required value is rejected whole with a reason in the model's
/// names; repeats of one key in a request are folded in record order, so the end state
/// is the one writing them one by one would leave. A key that another process inserts
/// between this writer's lookup and its insert fails the write with SQLSTATE 40001, and
/// the caller retries the transaction.
///
/// One writer per connection (it keeps temporary staging tables there). The `reject`
/// rule is not supported yet.
public final class PostgresBatchWriter: BatchRequestMaking {
    let connection: PostgresConnection
    let plans: [BatchInserter.EntityPlan]
    private let planIndex: [String: Int]
    /// Plans in write order: each after the plans its rows link to.
    let order: [Int]
    let statements: [Statements]
    /// Each entity's first row number made by this run (pk ≥ it: made by this run).
    public var firstRowOfRun: [String: Int64] = [:]

    struct Statements {
        let stage: String
        let copy: String
        let existing: String?
        let update: String?
        let insert: String
        let attributeCount: Int
        let linkCount: Int
        let maskWords: Int
    }

    /// A writer for `store`'s model on `connection`, by `rules` per entity name.
    /// - Throws: `PostgresError.unsupported` for a rule or a model shape this path does
    ///   not write yet; `.server` when the staging tables cannot be made.
    public init(store: PostgresStore, connection: PostgresConnection, rules: [String: ConflictRule] = [:]) throws(PostgresError) {
        self.connection = connection
        let plans = BatchInserter.makePlans(schema: store.schema, rules: rules)
        self.plans = plans
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
                    throw .unsupported("\(info.name).\(info.relationships[relationship].relationship.name) links to \(destination), which has no single-attribute key")
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
        var statements: [Statements] = []
        for (index, plan) in plans.enumerated() {
            statements.append(Self.statements(for: plan, number: index, plans: plans, planIndex: positions))
        }
        self.statements = statements
        for statement in statements { try connection.execute(statement.stage) }
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

    private static func statements(for plan: BatchInserter.EntityPlan, number: Int, plans: [BatchInserter.EntityPlan],
                                   planIndex: [String: Int]) -> Statements {
        let info = plan.info
        let stage = quoted("_stage_\(number)")
        let attributeCount = info.attributes.count
        let linkCount = info.toOneColumns.count
        var stagingColumns = ["_rec integer", "_op \"char\""]
        stagingColumns += info.attributeTypes.enumerated().map { "c\($0) \($1.stagingType)" }
        stagingColumns += (0..<linkCount).map { "l\($0) text" }
        stagingColumns += (0..<plan.maskWords).map { "m\($0) bigint" }
        let create = "CREATE TEMP TABLE IF NOT EXISTS \(stage) (\(stagingColumns.joined(separator: ", "))) ON COMMIT DELETE ROWS"
        let copyColumns = ["_rec", "_op"] + (0..<attributeCount).map { "c\($0)" } + (0..<linkCount).map { "l\($0)" }
            + (0..<plan.maskWords).map { "m\($0)" }
        let copy = "COPY \(stage) (\(copyColumns.joined(separator: ", "))) FROM STDIN"

        func attribute(_ position: Int) -> String { info.attributeTypes[position].fromStaging("s.c\(position)") }
        func link(_ number: Int) -> String {
            let destination = plans[planIndex[info.relationships[info.toOneColumns[number].relationship].destination]!]
            let key = destination.keyPosition!
            let type = destination.info.attributeTypes[key]
            return "(SELECT d.\"_pk\" FROM \(destination.info.table) d WHERE d.\(quoted(destination.info.attributeNames[key])) = "
                + type.fromStaging("s.l\(number)::\(type.stagingType)") + ")"
        }
        let columns = info.attributeNames.map(quoted) + info.toOneColumns.map { quoted($0.column) }
        let values = (0..<attributeCount).map(attribute) + (0..<linkCount).map(link)
        // Keys go in in key order: two transactions inserting the same new keys then wait
        // for each other in one order, never in a cycle (a deadlock).
        let insertOrder = plan.keyPosition.map { "s.c\($0)" } ?? "s._rec"
        var insert = "INSERT INTO \(info.table) (\(columns.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) "
            + "FROM \(stage) s WHERE s._op = 'i' ORDER BY \(insertOrder)"
        var existing: String?
        var update: String?
        if let key = plan.keyPosition {
            let keyColumn = quoted(info.attributeNames[key])
            let type = info.attributeTypes[key]
            insert += " ON CONFLICT (\(keyColumn)) DO NOTHING"
            existing = "SELECT u.k, t.\"_pk\" FROM unnest($1::text[]) AS u(k) JOIN \(info.table) t ON t.\(keyColumn) = "
                + type.fromStaging("u.k::\(type.stagingType)")
            func given(_ bit: Int) -> String { "((s.m\(bit / 64) >> \(bit % 64)) & 1) = 1" }
            let changing = columns.indices.filter { $0 != key }
            if !changing.isEmpty {
                update = "UPDATE \(info.table) AS t SET "
                    + changing.map { "\(columns[$0]) = CASE WHEN \(given($0)) THEN \(values[$0]) ELSE t.\(columns[$0]) END" }.joined(separator: ", ")
                    + " FROM \(stage) s WHERE s._op = 'u' AND t.\(keyColumn) = \(attribute(key)) AND ("
                    + changing.map { "(\(given($0)) AND t.\(columns[$0]) IS DISTINCT FROM \(values[$0]))" }.joined(separator: " OR ")
                    + ") RETURNING s._rec"
            }
        }
        return Statements(stage: create, copy: copy, existing: existing, update: update, insert: insert,
                          attributeCount: attributeCount, linkCount: linkCount, maskWords: plan.maskWords)
    }
}
