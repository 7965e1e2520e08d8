/// A save's statements in batches, for a backend where each statement is a round trip
/// to a server (PostgreSQL): one query finds the stored rows of many uniqueness keys, one
/// INSERT writes many rows. On SQLite a statement is a function call, and the save keeps
/// its per-object statements.
extension ObjectContext {
    /// The values of a uniqueness key as bytes: equal exactly when the server finds them
    /// equal (Swift's String equality would also merge canonically equivalent text).
    struct StoredKey: Hashable {
        var entity: ObjectIdentifier
        var constraint: Int
        var bytes: [UInt8]

        init(_ info: EntityInfo, constraint: Int, values: [Value]) {
            entity = ObjectIdentifier(info)
            self.constraint = constraint
            var bytes: [UInt8] = []
            for value in values {
                // -0.0 = 0.0 to the server, as to Swift.
                let value: Value = if case .double(let number) = value, number == 0 { .double(0) } else { value }
                bytes += PostgresValues.format(value).text.utf8
                // PostgreSQL text holds no NUL: it cannot occur inside a value.
                bytes.append(0)
            }
            self.bytes = bytes
        }
    }

    /// The stored rows of the uniqueness keys `objects` have, found in a few queries.
    func storedRows(for objects: [ManagedObject], _ db: StoreConnection) throws -> [StoredKey: Int64] {
        var wanted: [ObjectIdentifier: (info: EntityInfo, keys: [[[Value]]])] = [:]
        for object in objects where !object.info.uniquenessPositions.isEmpty {
            let info = object.info
            var entry = wanted[ObjectIdentifier(info)] ?? (info, Array(repeating: [], count: info.uniquenessPositions.count))
            for (constraint, positions) in info.uniquenessPositions.enumerated() {
                let values = positions.compactMap { object.values[$0] }
                if values.count == positions.count { entry.keys[constraint].append(values) }
            }
            wanted[ObjectIdentifier(info)] = entry
        }
        var found: [StoredKey: Int64] = [:]
        for (info, keys) in wanted.values {
            for (constraint, tuples) in keys.enumerated() where !tuples.isEmpty {
                let positions = info.uniquenessPositions[constraint]
                let columns = info.uniquenessConstraints[constraint].map(quoted)
                let types = positions.map { info.attributeTypes[$0] }
                let perTuple = "(" + columns.map { _ in "?" }.joined(separator: ", ") + ")"
                let step = max(1, 2_000 / columns.count)
                for start in stride(from: 0, to: tuples.count, by: step) {
                    let part = tuples[start..<min(tuples.count, start + step)]
                    let sql = "SELECT \"_pk\", \(columns.joined(separator: ", ")) FROM \(info.table) WHERE (\(columns.joined(separator: ", "))) IN ("
                        + Array(repeating: perTuple, count: part.count).joined(separator: ", ") + ")"
                    try db.query(sql, part.flatMap { $0.map(Optional.some) }) { row in
                        let values = types.enumerated().compactMap { row.value($1, $0 + 1) }
                        if let pk = row.key(0) { found[StoredKey(info, constraint: constraint, values: values)] = pk }
                    }
                }
            }
        }
        return found
    }

    /// Inserts the rows of `objects` (all new, with permanent IDs), many to a statement.
    func insertRows(_ objects: [ManagedObject], _ db: StoreConnection, row: (ManagedObject) -> [Value?]) throws {
        for group in Dictionary(grouping: objects, by: { ObjectIdentifier($0.info) }).values {
            let info = group[0].info
            let width = 1 + info.attributes.count + info.toOneColumns.count
            // A hierarchy's row carries its entity's number, written into the statement.
            let tuple = "(?" + (info.code.map { ", \($0)" } ?? "") + String(repeating: ", ?", count: width - 1) + ")"
            let columns = [quoted("_pk")] + (info.code == nil ? [] : [quoted("_entity")])
                + info.attributes.map { quoted($0.name) } + info.toOneColumns.map { quoted($0.column) }
            // PostgreSQL takes at most 65,535 parameters a statement.
            let step = max(1, 30_000 / width)
            for start in stride(from: 0, to: group.count, by: step) {
                let part = group[start..<min(group.count, start + step)]
                var arguments: [Value?] = []
                arguments.reserveCapacity(part.count * width)
                for object in part {
                    arguments.append((object.savedID ?? object.objectID).primaryKey.map(Value.int))
                    arguments += row(object)
                }
                try db.execute("INSERT INTO \(info.table) (\(columns.joined(separator: ", "))) VALUES "
                               + Array(repeating: tuple, count: part.count).joined(separator: ", "), arguments)
            }
        }
    }

    /// The entity of stored row `pk` of `info`'s table, when the table holds a hierarchy.
    func storedEntity(of pk: Int64, _ info: EntityInfo, _ db: StoreConnection) throws -> String? {
        guard info.code != nil else { return nil }
        guard let code = try db.int64s("SELECT \"_entity\" FROM \(info.table) WHERE \"_pk\" = ?", [.int(pk)]).first else { return nil }
        return coordinator.schema.model.subentities(of: info.rootName).first { Model.entityCode($0) == code } ?? "unknown entity (\(code))"
    }
}
