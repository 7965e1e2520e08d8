import Foundation

/// Placeholders on the object path: objects an import made only because a record named
/// their key, which the first record that describes them fills whatever their entity's
/// update rule (the batch path marks them in its own statements). The mark lives in a
/// column contexts never read (`EntityInfo.placeholderColumn`); a save writes the marks
/// staged here in its own transaction.
extension ObjectContext {
    /// Which of `ids` (stored objects) are placeholders, read from the store as committed.
    /// - Throws: `StoreError` when the store cannot be read.
    package func placeholders(among ids: [ObjectID]) throws -> Set<ObjectID> {
        checkAccess()
        var byEntity: [String: [Int64]] = [:]
        for id in ids { if let pk = id.primaryKey { byEntity[id.entityName, default: []].append(pk) } }
        guard !byEntity.isEmpty else { return [] }
        let storeID = coordinator.storeID
        return try coordinator.reading { db in
            var found = Set<ObjectID>()
            for (entity, pks) in byEntity {
                let info = entityInfo(entity)
                for start in stride(from: 0, to: pks.count, by: 500) {
                    let slice = pks[start..<min(start + 500, pks.count)]
                    let sql = "SELECT \"_pk\" FROM \(info.table) WHERE \(EntityInfo.placeholderColumn) IS NOT NULL AND \"_pk\" IN ("
                        + slice.map(String.init).joined(separator: ", ") + ")"
                    for pk in try db.int64s(sql) { found.insert(ObjectID(storeID: storeID, entityName: entity, key: .permanent(pk))) }
                }
            }
            return found
        }
    }

    /// Marks `object` (inserted or stored) as a placeholder at the next save.
    package func markPlaceholder(_ object: ManagedObject) {
        checkAccess()
        placeholderMarks.append((object, true))
    }

    /// Unmarks `object` (a stored placeholder a record describes) at the next save.
    package func unmarkPlaceholder(_ object: ManagedObject) {
        checkAccess()
        placeholderMarks.append((object, false))
    }

    /// Writes the staged marks in the save's transaction, after the rows; the last mark of an object wins.
    func writePlaceholderMarks(_ db: StoreConnection, key: (ObjectID?) -> Int64?) throws {
        guard !placeholderMarks.isEmpty else { return }
        var marks: [ObjectIdentifier: (object: ManagedObject, placeholder: Bool)] = [:]
        for mark in placeholderMarks { marks[ObjectIdentifier(mark.object)] = mark }
        var rows: [String: (info: EntityInfo, set: [Int64], cleared: [Int64])] = [:]
        for (object, placeholder) in marks.values where !object.isDeleted {
            guard let pk = key(object.savedID ?? object.objectID) else { continue }
            let root = object.info.rootName
            if rows[root] == nil { rows[root] = (entityInfo(root), [], []) }
            if placeholder { rows[root]!.set.append(pk) } else { rows[root]!.cleared.append(pk) }
        }
        for (_, entity) in rows.sorted(by: { $0.key < $1.key }) {
            for (pks, value) in [(entity.set, "1"), (entity.cleared, "NULL")] where !pks.isEmpty {
                for start in stride(from: 0, to: pks.count, by: 500) {
                    let list = pks[start..<min(start + 500, pks.count)].map(String.init).joined(separator: ", ")
                    _ = try db.execute("UPDATE \(entity.info.table) SET \(EntityInfo.placeholderColumn) = \(value) WHERE \"_pk\" IN (\(list))")
                }
            }
        }
    }
}
