import Foundation

/// The rows a `BatchDeleteRequest` removes, worked out and deleted inside its write
/// transaction with the store's SQL alone: the rows the predicate matched, closed over
/// cascade rules, checked against deny rules, then deleted with every link to them (what a
/// context's save does per object in `deleteRow`, here per 500 rows).
struct BatchDeletion {
    let schema: Schema
    let storeID: UUID
    /// Rows to delete, by hierarchy root (the table), in the order the roots were met.
    private(set) var rows: [String: Set<Int64>] = [:]
    private var roots: [String] = []
    /// Rows (not deleted) whose link to a deleted row went, with the relationships that changed.
    private(set) var unlinked: [ObjectID: [String]] = [:]

    /// Rows bound to one statement: far under SQLite's and PostgreSQL's parameter limits.
    static let chunkSize = 500

    init(schema: Schema, storeID: UUID) {
        self.schema = schema
        self.storeID = storeID
    }

    /// Every row to delete, as object IDs.
    var deletedIDs: Set<ObjectID> {
        var ids = Set<ObjectID>()
        for (root, keys) in rows { for key in keys { ids.insert(id(root, key)) } }
        return ids
    }

    func id(_ root: String, _ key: Int64) -> ObjectID {
        ObjectID(storeID: storeID, entityName: root, key: .permanent(key))
    }

    /// Adds rows of the hierarchy `root`; returns those not already there.
    @discardableResult
    mutating func add(_ root: String, _ keys: some Sequence<Int64>) -> [Int64] {
        if rows[root] == nil {
            roots.append(root)
            rows[root] = []
        }
        var new: [Int64] = []
        for key in keys where rows[root, default: []].insert(key).inserted { new.append(key) }
        return new
    }

    // MARK: - Delete rules

    /// Adds what cascade rules delete along with the rows, and what those cascade to.
    /// - Throws: `StoreError` for the database's failures.
    mutating func addCascades(_ db: StoreConnection) throws {
        var queue = roots.map { ($0, Array(rows[$0]!).sorted()) }
        var next = 0
        while next < queue.count {
            let (root, keys) = queue[next]
            next += 1
            for (info, relationship) in relationships(ofHierarchy: root) where relationship.relationship.deleteRule == .cascade {
                let targets = try pairs(relationship, of: info, keys, db).map(\.target)
                let new = add(relationship.destinationRoot, targets)
                if !new.isEmpty { queue.append((relationship.destinationRoot, new.sorted())) }
            }
        }
    }

    /// One problem per row to delete that still has a related object, not deleted with it,
    /// through a relationship with the deny rule.
    /// - Throws: `StoreError` for the database's failures.
    func denyProblems(_ db: StoreConnection) throws -> [ValidationProblem] {
        var problems: [ValidationProblem] = []
        for root in roots {
            let keys = Array(rows[root]!).sorted()
            for (info, relationship) in relationships(ofHierarchy: root) where relationship.relationship.deleteRule == .deny {
                let deleted = rows[relationship.destinationRoot] ?? []
                var live: [Int64: Int] = [:]
                for pair in try pairs(relationship, of: info, keys, db) where !deleted.contains(pair.target) {
                    live[pair.source, default: 0] += 1
                }
                for (source, count) in live.sorted(by: { $0.key < $1.key }) {
                    problems.append(ValidationProblem(object: "\(info.name) row \(source)", objectID: id(root, source), entity: info.name,
                                                      property: relationship.relationship.name, rule: .deleteDenied,
                                                      message: "has \(count) related object(s) and the deny rule"))
                }
            }
        }
        return problems
    }

    /// The relationships of every entity of the hierarchy `root`, each once, with the entity
    /// declaring it (rows of other entities of the table have no links through it).
    func relationships(ofHierarchy root: String) -> [(EntityInfo, RelationshipInfo)] {
        var seen = Set<String>()
        var result: [(EntityInfo, RelationshipInfo)] = []
        for name in schema.model.subentities(of: root) {
            guard let info = schema.entity(name) else { continue }
            for relationship in info.relationships where seen.insert(relationship.relationship.name).inserted {
                result.append((info, relationship))
            }
        }
        return result
    }

    /// The links of `relationship` from the rows `keys` of `info`'s table: (row, related row).
    private func pairs(_ relationship: RelationshipInfo, of info: EntityInfo, _ keys: [Int64],
                       _ db: StoreConnection) throws -> [(source: Int64, target: Int64)] {
        let sql: String
        switch relationship.storage {
        case .column(let column):
            sql = "SELECT \"_pk\", \(quoted(column)) FROM \(info.table) WHERE \(quoted(column)) IS NOT NULL AND \"_pk\" IN "
        case .inverseColumn(let column):
            sql = "SELECT \(quoted(column)), \"_pk\" FROM \(quoted(relationship.destinationRoot)) WHERE \(quoted(column)) IN "
        case .joinTable(let table, let source, let destination):
            sql = "SELECT \(quoted(source)), \(quoted(destination)) FROM \(quoted(table)) WHERE \(quoted(source)) IN "
        }
        var result: [(Int64, Int64)] = []
        for chunk in Self.chunks(keys) {
            try db.query(sql + Self.list(chunk.count), chunk.map { .int($0) }, cached: false) { row in
                if let source = row.key(0), let target = row.key(1) { result.append((source, target)) }
            }
        }
        return result
    }

    // MARK: - Deleting

    /// Deletes every row, then every link to them: to-one columns pointing at them become
    /// NULL (with their positions), join-table rows go. Returns what history records: each
    /// deleted row with its uniqueness key values, each unlinked row with its relationship.
    /// - Throws: `StoreError` for the database's failures.
    mutating func delete(_ db: StoreConnection) throws -> HistoryChanges {
        var changes = HistoryChanges()
        for root in roots {
            let hierarchy = schema.model.subentities(of: root).compactMap { schema.entity($0) }
            let rootInfo = schema.entity(root)!
            let names = Dictionary(hierarchy.compactMap { info in info.code.map { ($0, info.name) } }) { first, _ in first }
            // The columns of every uniqueness key in the table, for the tombstones.
            var keyColumns: [(name: String, type: AttributeType)] = []
            for info in hierarchy {
                for position in info.uniquenessPositions.joined() where !keyColumns.contains(where: { $0.name == info.attributeNames[position] }) {
                    keyColumns.append((info.attributeNames[position], info.attributeTypes[position]))
                }
            }
            let entityColumn = rootInfo.code != nil
            let returning = ["\"_pk\""] + (entityColumn ? ["\"_entity\""] : []) + keyColumns.map { quoted($0.name) }
            let sql = "DELETE FROM \(rootInfo.table) WHERE \"_pk\" IN "
            var deleted: [(key: Int64, entity: String, tombstone: [String: Value])] = []
            for chunk in Self.chunks(Array(rows[root]!).sorted()) {
                try db.query(sql + Self.list(chunk.count) + " RETURNING " + returning.joined(separator: ", "),
                             chunk.map { .int($0) }, cached: false) { row in
                    guard let key = row.key(0) else { return }
                    let name = entityColumn ? row.key(1).flatMap { names[$0] } ?? root : root
                    let first = entityColumn ? 2 : 1
                    var stored: [String: Value] = [:]
                    for (offset, column) in keyColumns.enumerated() { stored[column.name] = row.value(column.type, first + offset) }
                    var tombstone: [String: Value] = [:]
                    if let info = schema.entity(name) {
                        for position in info.uniquenessPositions.joined() {
                            tombstone[info.attributeNames[position]] = stored[info.attributeNames[position]]
                        }
                    }
                    deleted.append((key, name, tombstone))
                }
            }
            // In row order: RETURNING gives the rows in whatever order the database deleted them.
            for row in deleted.sorted(by: { $0.key < $1.key }) { changes.addDelete(row.entity, row: row.key, tombstone: row.tombstone) }
        }
        for root in roots { try unlink(root, db) }
        for (id, properties) in unlinked.sorted(by: { ($0.key.entityName, $0.key.primaryKey!) < ($1.key.entityName, $1.key.primaryKey!) }) {
            changes.add(id.entityName, .update, row: id.primaryKey!, properties: properties)
        }
        return changes
    }

    /// Clears every link to the deleted rows of `root` held on other rows.
    private mutating func unlink(_ root: String, _ db: StoreConnection) throws {
        let keys = Array(rows[root]!).sorted()
        for (_, relationship) in relationships(ofHierarchy: root) {
            guard let destination = schema.entity(relationship.destination),
                  let inverseIndex = destination.relationshipIndex[relationship.inverseName] else { continue }
            let inverse = destination.relationships[inverseIndex]
            let sql: (head: String, tail: String)
            switch inverse.storage {
            case .column(let column):
                // A position among the deleted owner's members goes with the link.
                let position = relationship.orderColumn.map { ", \(quoted($0)) = NULL" } ?? ""
                sql = ("UPDATE \(destination.table) SET \(quoted(column)) = NULL\(position) WHERE \(quoted(column)) IN ", " RETURNING \"_pk\"")
            case .joinTable(let table, let source, let other):
                sql = ("DELETE FROM \(quoted(table)) WHERE \(quoted(other)) IN ", " RETURNING \(quoted(source))")
            case .inverseColumn:
                continue
            }
            let deleted = rows[destination.rootName] ?? []
            var touched: [Int64] = []
            for chunk in Self.chunks(keys) {
                try db.query(sql.head + Self.list(chunk.count) + sql.tail, chunk.map { .int($0) }, cached: false) { row in
                    if let key = row.key(0), !deleted.contains(key) { touched.append(key) }
                }
            }
            for key in Set(touched) {
                let id = id(destination.rootName, key)
                if unlinked[id]?.contains(inverse.relationship.name) != true { unlinked[id, default: []].append(inverse.relationship.name) }
            }
        }
    }

    static func chunks(_ keys: [Int64]) -> [ArraySlice<Int64>] {
        stride(from: 0, to: keys.count, by: chunkSize).map { keys[$0..<min(keys.count, $0 + chunkSize)] }
    }

    /// `(?, ?, …)` for `count` values.
    static func list(_ count: Int) -> String {
        "(" + Array(repeating: "?", count: count).joined(separator: ", ") + ")"
    }
}
