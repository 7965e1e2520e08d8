import GRDB

extension PersistentStoreCoordinator {
    /// What SQLite's integrity check and Ingest's own checks find wrong with the store:
    /// every to-one pointing at an existing row, every uniqueness constraint holding.
    /// Empty when the store is sound. Runs on a reader, so it works during an import.
    /// - Throws: `StoreError.database` when the store cannot be read at all.
    public func integrityProblems() throws -> [String] {
        let deferred = try secondaryIndexesDeferred()
        return try read { db in
            var problems: [String] = []
            let report = try String.fetchAll(db, sql: "PRAGMA integrity_check")
            if report != ["ok"] { problems += report.prefix(20).map { "SQLite integrity check: \($0)" } }
            for entity in model.entities {
                let info = schema.entity(entity.name)!
                for (position, column) in info.toOneColumns {
                    let relationship = info.relationships[position]
                    let destination = schema.entity(relationship.destination)!
                    let dangling = try Int.fetchOne(db, sql: """
                        SELECT count(*) FROM \(info.table) t WHERE t.\(quoted(column)) IS NOT NULL
                        AND NOT EXISTS (SELECT 1 FROM \(destination.table) d WHERE d."_pk" = t.\(quoted(column)))
                        """) ?? 0
                    if dangling > 0 {
                        problems.append("\(dangling) \(entity.name) row(s) have \(relationship.relationship.name) pointing at no \(destination.name) row")
                    }
                }
                problems += try Self.missingIndexes(db, info, secondaryDeferred: deferred)
                problems += try Self.mistypedValues(db, info)
                for constraint in info.uniquenessConstraints {
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

    /// Values whose storage class is not the one Ingest writes for their attribute's type
    /// (a model edited after the rows were written, say: text under an int64): one scan a table.
    static func mistypedValues(_ db: Database, _ info: EntityInfo) throws -> [String] {
        guard !info.attributeNames.isEmpty else { return [] }
        let counts = zip(info.attributeNames, info.attributeTypes).map { name, type in
            "coalesce(sum(typeof(\(quoted(name))) NOT IN ('null', '\(type.sqlType.lowercased())')), 0)"
        }
        guard let row = try Row.fetchOne(db, sql: "SELECT \(counts.joined(separator: ", ")) FROM \(info.table)") else { return [] }
        return zip(info.attributeNames, info.attributeTypes).enumerated().compactMap { index, attribute in
            let count: Int = row[index]
            guard count > 0 else { return nil }
            return "\(count) \(info.name).\(attribute.0) value(s) are not \(attribute.1.sqlType.lowercased()), as \(attribute.1.rawValue) values are stored (was the model edited?)"
        }
    }

    /// The model's indexes the store lacks: each uniqueness constraint's unique index on
    /// its columns (an import's upserts need it), each join table's reverse index and,
    /// unless an import dropped them for its length, the secondary indexes.
    static func missingIndexes(_ db: Database, _ info: EntityInfo, secondaryDeferred: Bool) throws -> [String] {
        var problems: [String] = []
        func columns(_ index: String) throws -> [String]? {
            guard try String.fetchOne(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name = ?", arguments: [index]) != nil else { return nil }
            return try Row.fetchAll(db, sql: "SELECT name FROM pragma_index_info(?) ORDER BY seqno", arguments: [index]).map { $0["name"] }
        }
        for (number, constraint) in info.uniquenessConstraints.enumerated() {
            let index = "_unique_\(info.name)_\(number)"
            let unique = try Bool.fetchOne(db, sql: "SELECT \"unique\" FROM pragma_index_list(?) WHERE name = ?", arguments: [info.name, index]) ?? false
            if try columns(index) != constraint || !unique {
                problems.append("\(info.name): the unique index of (\(constraint.joined(separator: ", "))) is missing (the next import's upserts need it)")
            }
        }
        if !secondaryDeferred {
            for index in info.secondaryIndexes where try columns(index.name) == nil {
                problems.append("\(info.name): the index \(index.name) is missing (queries still work, slower)")
            }
        }
        for relationship in info.relationships {
            if case .joinTable(let table, "_a", _) = relationship.storage, try columns(table + "_b") != ["_b", "_a"] {
                problems.append("\(info.name).\(relationship.relationship.name): the index \(table)_b is missing")
            }
        }
        return problems
    }
}
