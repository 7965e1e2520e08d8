/// A save's positions of ordered to-many members, and the entity of a hierarchy's row.
extension ObjectContext {
    /// Writes the positions of the members of every ordered to-many whose order changed:
    /// after the rows and links, so each member's link (or join row) is there to hold it.
    /// A member linked to another owner meanwhile is left alone (the condition on the link);
    /// one that left its owner for none loses its position. Owners go in key order (two
    /// saves lock rows in the same order), their positions many to a statement.
    func writePositions(_ db: StoreConnection, plan: SavePlan, key: (ObjectID?) -> Int64?) throws {
        let merged = Dictionary(plan.merged.map { (ObjectIdentifier($0.object), $0.policy) }, uniquingKeysWith: { a, _ in a })
        let owners = toManyHolders.values.filter { !$0.isDeleted && $0.hasUnsavedOrder }
            .compactMap { owner in key(owner.savedID ?? owner.objectID).map { (owner, $0) } }
            .sorted { ($0.0.info.rootName, $0.1) < ($1.0.info.rootName, $1.1) }
        for (object, owner) in owners {
            // An object a uniqueness policy merged onto a stored row: under rollback the store
            // wins; otherwise its members follow the stored ones.
            let policy = merged[ObjectIdentifier(object)]
            if policy == .rollback { continue }
            for (index, relationship) in object.info.relationships.enumerated() {
                let state = object.toMany[index]
                guard let orderColumn = relationship.orderColumn, state.orderChanged, let order = state.order else { continue }
                let destination = entityInfo(relationship.destination)
                let keys = order.compactMap(key)
                var first: Int64 = 0
                let target: String, member: String, owned: String
                switch relationship.storage {
                case .inverseColumn(let column):
                    let left = state.removed.compactMap(key)
                    if !left.isEmpty {
                        try db.execute("UPDATE \(destination.table) SET \(quoted(orderColumn)) = NULL WHERE \"_pk\" IN (\(left.map { _ in "?" }.joined(separator: ", "))) AND \(quoted(column)) IS NULL",
                                       left.map { .int($0) })
                    }
                    (target, member, owned) = (destination.table, "\(destination.table).\"_pk\"", "\(destination.table).\(quoted(column))")
                    if policy != nil {
                        first = try db.int64("SELECT coalesce(max(\(quoted(orderColumn))) + 1, 0) FROM \(destination.table) WHERE \(quoted(column)) = ?"
                                             + (keys.isEmpty ? "" : " AND \"_pk\" NOT IN (\(keys.map { _ in "?" }.joined(separator: ", ")))"),
                                             [.int(owner)] + keys.map { .int($0) }) ?? 0
                    }
                case .joinTable(let table, let source, let other):
                    (target, member, owned) = (quoted(table), "\(quoted(table)).\(quoted(other))", "\(quoted(table)).\(quoted(source))")
                    if policy != nil {
                        first = try db.int64("SELECT coalesce(max(\(quoted(orderColumn))) + 1, 0) FROM \(quoted(table)) WHERE \(quoted(source)) = ?"
                                             + (keys.isEmpty ? "" : " AND \(quoted(other)) NOT IN (\(keys.map { _ in "?" }.joined(separator: ", ")))"),
                                             [.int(owner)] + keys.map { .int($0) }) ?? 0
                    }
                case .column:
                    continue
                }
                for start in stride(from: 0, to: keys.count, by: 500) {
                    let part = keys[start..<min(keys.count, start + 500)]
                    var arguments: [Value?] = []
                    arguments.reserveCapacity(part.count * 2 + 1)
                    for (offset, memberKey) in part.enumerated() {
                        arguments.append(.int(memberKey))
                        arguments.append(.int(first + Int64(start + offset)))
                    }
                    arguments.append(.int(owner))
                    try db.execute("UPDATE \(target) SET \(quoted(orderColumn)) = v.column2 FROM (VALUES "
                                   + part.map { _ in "(?, ?)" }.joined(separator: ", ")
                                   + ") AS v WHERE \(member) = v.column1 AND \(owned) = ?", arguments)
                }
            }
        }
    }

    /// The entity of stored row `pk` of `info`'s table, when the table holds a hierarchy.
    func storedEntity(of pk: Int64, _ info: EntityInfo, _ db: StoreConnection) throws -> String? {
        guard info.code != nil else { return nil }
        guard let code = try db.int64s("SELECT \"_entity\" FROM \(info.table) WHERE \"_pk\" = ?", [.int(pk)]).first else { return nil }
        return info.subtreeCodes.isEmpty ? nil
            : coordinator.schema.model.subentities(of: info.rootName).first { Model.entityCode($0) == code } ?? "unknown entity (\(code))"
    }
}
