import CSQLite

extension PersistentStoreCoordinator {
    /// What SQLite's integrity check and Ingest's own checks find wrong with the store:
    /// every to-one pointing at an existing row, every uniqueness constraint holding, every
    /// history row readable and naming only row numbers its table gave (`historyProblems()`).
    /// Empty when the store is sound. Runs on a reader, so it works during an import.
    /// - Throws: `StoreError.database` when the store cannot be read at all.
    public func integrityProblems() throws -> [String] {
        let deferred = try secondaryIndexesDeferred()
        return try storeProblems(secondaryDeferred: deferred) + historyProblems()
    }

    /// What is wrong with the store's history: rows that cannot be read, and rows naming a
    /// row number above the highest their entity's table ever gave (reading those would
    /// make that many changes). At most 20; empty for a store without history tables.
    /// - Throws: the store's errors when it cannot be read.
    public func historyProblems() throws -> [String] {
        try reading { connection in try HistoryLog.problems(schema: schema, connection) }
    }

    /// `historyProblems()` of the PostgreSQL store holding `model`, on a connection of the caller's.
    /// - Throws: `StoreError.postgres` when the database cannot be read.
    package static func historyProblems(model: Model, on connection: PostgresConnection) throws -> [String] {
        try HistoryLog.problems(schema: Schema(model), StoreConnection(kind: .postgres(connection)))
    }

    @_optimize(none)
    private func storeProblems(secondaryDeferred deferred: Bool) throws -> [String] {
        try read { db in
            var problems: [String] = []
            let report = try String.fetchAll(db, sql: "PRAGMA integrity_check")
            if report != ["ok"] { problems += report.prefix(20).map { "SQLite integrity check: \($0)" } }
            for entity in model.entities {
                let info = schema.entity(entity.name)!
                // A hierarchy's table is checked once, through its root (its columns, indexes,
                // values and constraints are all there); a subentity adds nothing to check.
                guard !info.needsEntityFilter else { continue }
                for (position, column) in Self.hierarchyToOnes(info, schema) {
                    let relationship = position
                    let destination = schema.entity(relationship.destination)!
                    let dangling = try Int.fetchOne(db, sql: """
                        SELECT count(*) FROM \(info.table) t WHERE t.\(quoted(column)) IS NOT NULL
                        AND NOT EXISTS (SELECT 1 FROM \(destination.table) d WHERE d."_pk" = t.\(quoted(column)))
                        """) ?? 0
                    if dangling > 0 {
                        problems.append("\(dangling) \(entity.name) row(s) have \(relationship.relationship.name) pointing at no \(destination.name) row")
                    }
                }
                for member in schema.model.subentities(of: entity.name) {
                    problems += try Self.missingIndexes(db, schema.entity(member)!, secondaryDeferred: deferred, ownOnly: member != entity.name)
                }
                problems += try Self.mistypedValues(db, info, schema)
                for constraint in schema.model.subentities(of: entity.name).flatMap({ schema.model.entity($0)!.declaredUniquenessConstraints }) {
                    let columns = constraint.map(quoted).joined(separator: ", ")
                    let present = constraint.map { "\(quoted($0)) IS NOT NULL" }.joined(separator: " AND ")
                    let repeated = try Int.fetchOne(db, sql: """
                        SELECT count(*) FROM (SELECT 1 FROM \(info.table) WHERE \(present) GROUP BY \(columns) HAVING count(*) > 1)
                        """) ?? 0
                    if repeated > 0 {
                        problems.append("\(repeated) value(s) of \(entity.name).\(constraint.joined(separator: "+")) appear in more than one row")
                    }
                }
            }
            return problems
        }
    }

    /// The to-one columns of the entity's table: its own, and its subentities' (declared by them).
    static func hierarchyToOnes(_ info: EntityInfo, _ schema: Schema) -> [(RelationshipInfo, String)] {
        var result = info.toOneColumns.map { (info.relationships[$0.relationship], $0.column) }
        for member in schema.model.subentities(of: info.name, includingItself: false) {
            let sub = schema.entity(member)!
            for (index, column) in sub.toOneColumns where index >= sub.entity.inheritedCounts.relationships {
                result.append((sub.relationships[index], column))
            }
        }
        return result
    }

    /// Values whose storage class is not the one Ingest writes for their attribute's type
    /// (a model edited after the rows were written, say: text under an int64): one scan a table.
    @_optimize(none)
    static func mistypedValues(_ db: SQLiteDatabase, _ info: EntityInfo, _ schema: Schema) throws -> [String] {
        // The table's columns: the entity's attributes and its subentities' own.
        var attributes = info.attributes
        for member in schema.model.subentities(of: info.name, includingItself: false) {
            attributes += schema.model.entity(member)!.declaredAttributes
        }
        guard !attributes.isEmpty else { return [] }
        let counts = attributes.map { attribute in (attribute.name, attribute.type) }.map { name, type in
            "coalesce(sum(typeof(\(quoted(name))) NOT IN ('null', '\(type.sqlType.lowercased())')), 0)"
        }
        var row: [Int] = []
        try db.forEachRow(sql: "SELECT \(counts.joined(separator: ", ")) FROM \(info.table)") { statement in
            row = (0..<Int32(counts.count)).map { Int(sqlite3_column_int64(statement, $0)) }
            return false
        }
        guard !row.isEmpty else { return [] }
        return attributes.map { ($0.name, $0.type) }.enumerated().compactMap { index, attribute in
            let count = row[index]
            guard count > 0 else { return nil }
            return "\(count) \(info.name).\(attribute.0) value(s) are not \(attribute.1.sqlType.lowercased()), as \(attribute.1.rawValue) values are stored (was the model edited?)"
        }
    }

    /// The model's indexes the store lacks: each uniqueness constraint's unique index on
    /// its columns (an import's upserts need it), each join table's reverse index and,
    /// unless an import dropped them for its length, the secondary indexes.
    /// With `ownOnly` (a subentity): its own constraints and join tables only, as the root's
    /// call covers the table's other indexes.
    @_optimize(none)
    static func missingIndexes(_ db: SQLiteDatabase, _ info: EntityInfo, secondaryDeferred: Bool, ownOnly: Bool = false) throws -> [String] {
        var problems: [String] = []
        func columns(_ index: String) throws -> [String]? {
            guard try String.fetchOne(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name = ?", arguments: [index]) != nil else { return nil }
            return try String.fetchAll(db, sql: "SELECT name FROM pragma_index_info(?) ORDER BY seqno", arguments: [index])
        }
        // Each constraint's index is named after the entity declaring it, on the hierarchy's table.
        for (offset, constraint) in info.entity.declaredUniquenessConstraints.enumerated() {
            let index = "_unique_\(info.name)_\(info.entity.inheritedCounts.uniquenessConstraints + offset)"
            let unique = try Bool.fetchOne(db, sql: "SELECT \"unique\" FROM pragma_index_list(?) WHERE name = ?", arguments: [info.rootName, index]) ?? false
            if try columns(index) != constraint || !unique {
                problems.append("\(info.name): the unique index of (\(constraint.joined(separator: ", "))) is missing (the next import's upserts need it)")
            }
        }
        if !secondaryDeferred && !ownOnly {
            for index in info.secondaryIndexes where try columns(index.name) == nil {
                problems.append("\(info.name): the index \(index.name) is missing (queries still work, slower)")
            }
        }
        for relationship in info.relationships[info.entity.inheritedCounts.relationships...] {
            if case .joinTable(let table, "_a", _) = relationship.storage, try columns(table + "_b") != ["_b", "_a"] {
                problems.append("\(info.name).\(relationship.relationship.name): the index \(table)_b is missing")
            }
        }
        return problems
    }
}
