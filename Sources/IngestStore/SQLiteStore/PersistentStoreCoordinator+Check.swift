import GRDB

extension PersistentStoreCoordinator {
    /// What SQLite's integrity check and Ingest's own checks find wrong with the store:
    /// every to-one pointing at an existing row, every uniqueness constraint holding.
    /// Empty when the store is sound. Runs on a reader, so it works during an import.
    /// - Throws: `StoreError.database` when the store cannot be read at all.
    public func integrityProblems() throws -> [String] {
        try read { db in
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
}
