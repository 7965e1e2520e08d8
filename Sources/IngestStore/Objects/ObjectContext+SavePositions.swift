/// A save's positions of ordered to-many members.
extension ObjectContext {
    /// Writes the positions of the members of every ordered to-many whose order changed:
    /// after the rows and links, so each member's link (or join row) is there to hold it.
    /// A member linked to another owner meanwhile is left alone (the condition on the link);
    /// one that left its owner for none loses its position. Owners go in key order, their
    /// positions many to a statement.
    func writePositions(_ db: StoreConnection, plan: SavePlan, key: (ObjectID?) -> Int64?) throws {
        // Most models have none: no walk over the holders of to-many state on every save.
        guard coordinator.schema.hasOrderedRelationships else { return }
        let merged = Dictionary(plan.merged.map { (ObjectIdentifier($0.object), $0.policy) }, uniquingKeysWith: { a, _ in a })
        // Objects merged onto a row go after its other owner object (if any), whose positions they follow.
        let owners = toManyHolders.values.filter { !$0.isDeleted && $0.hasUnsavedOrder }
            .compactMap { owner in key(owner.savedID ?? owner.objectID).map { (owner, $0, merged[ObjectIdentifier(owner)] == nil ? 0 : 1) } }
            .sorted { ($0.0.info.rootName, $0.1, $0.2) < ($1.0.info.rootName, $1.1, $1.2) }
        for (object, owner, _) in owners {
            // An object a uniqueness policy merged onto a stored row: its members follow the stored ones.
            let appends = merged[ObjectIdentifier(object)] != nil
            for (index, relationship) in object.info.relationships.enumerated() {
                let state = object.toMany[index]
                guard let orderColumn = relationship.orderColumn, state.orderChanged, let order = state.order else { continue }
                let destination = entityInfo(relationship.destination)
                var seen = Set<Int64>()
                let keys = order.compactMap(key).filter { seen.insert($0).inserted }
                let target: String, member: String, owned: String
                switch relationship.storage {
                case .inverseColumn(let column):
                    for part in Self.parts(state.removed.compactMap(key)) {
                        try db.execute("UPDATE \(destination.table) SET \(quoted(orderColumn)) = NULL WHERE \"_pk\" IN (\(Self.placeholders(part.count))) AND \(quoted(column)) IS NULL",
                                       part.map { .int($0) })
                    }
                    (target, member, owned) = (destination.table, "\(destination.table).\"_pk\"", "\(destination.table).\(quoted(column))")
                case .joinTable(let table, let source, let other):
                    (target, member, owned) = (quoted(table), "\(quoted(table)).\(quoted(other))", "\(quoted(table)).\(quoted(source))")
                case .column:
                    continue
                }
                var first: Int64 = 0
                if appends && !keys.isEmpty {
                    // Its members' old positions go first, so the stored ones' maximum is left.
                    for part in Self.parts(keys) {
                        try db.execute("UPDATE \(target) SET \(quoted(orderColumn)) = NULL WHERE \(member) IN (\(Self.placeholders(part.count))) AND \(owned) = ?",
                                       part.map { .int($0) } + [.int(owner)])
                    }
                    first = try db.int64("SELECT coalesce(max(\(quoted(orderColumn))) + 1, 0) FROM \(target) WHERE \(owned) = ?", [.int(owner)]) ?? 0
                }
                for (number, part) in Self.parts(keys).enumerated() {
                    var arguments: [Value?] = []
                    arguments.reserveCapacity(part.count * 2 + 1)
                    for (offset, memberKey) in part.enumerated() {
                        arguments.append(.int(memberKey))
                        arguments.append(.int(first + Int64(number * Self.positionsPerStatement + offset)))
                    }
                    arguments.append(.int(owner))
                    // `_v`: names starting with `_` are the store's own, so no table has it.
                    try db.execute("UPDATE \(target) SET \(quoted(orderColumn)) = \"_v\".column2 FROM (VALUES "
                                   + part.map { _ in "(?, ?)" }.joined(separator: ", ")
                                   + ") AS \"_v\" WHERE \(member) = \"_v\".column1 AND \(owned) = ?", arguments)
                }
            }
        }
    }

    /// Members (or pairs) per statement: well under both databases' limits on parameters.
    private static let positionsPerStatement = 500

    private static func parts(_ keys: [Int64]) -> [ArraySlice<Int64>] {
        stride(from: 0, to: keys.count, by: positionsPerStatement).map { keys[$0..<min(keys.count, $0 + positionsPerStatement)] }
    }

    private static func placeholders(_ count: Int) -> String { Array(repeating: "?", count: count).joined(separator: ", ") }
}
