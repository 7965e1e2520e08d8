import Foundation

/// Optimistic locking by snapshot: a save compares each row it writes over with the row
/// as its context read it (`ManagedObject.committed`, kept from the first change), read
/// again inside the save's transaction. Snapshots, not a version column: the batch paths'
/// statements stay as they are, and a policy that merges property by property needs to
/// know which properties the store changed, which a version number cannot tell.
extension ObjectContext {
    /// Rows read per statement.
    private static let conflictReadChunk = 500

    /// Checks every object this save updates (and, under `.error`, deletes) against its row
    /// as stored now, and resolves what the store changed by `policy`, changing the objects
    /// before their rows are written. Runs inside the save's transaction; on PostgreSQL the
    /// rows stay locked (`FOR UPDATE`) until it commits, so no one changes them in between.
    /// - Returns: updated objects whose rows the store deleted, given up by the policy
    ///   (store trump, rollback): the save treats them as deleted.
    /// - Throws: `StoreError.mergeConflict` naming every conflict, under `.error`, or for a
    ///   row deleted from the store under object trump or overwrite; nothing is changed.
    func resolveStoreConflicts(_ db: StoreConnection, policy: MergePolicy) throws -> Set<ObjectID> {
        var byEntity: [ObjectIdentifier: (info: EntityInfo, objects: [(object: ManagedObject, deleting: Bool)])] = [:]
        func add(_ object: ManagedObject, deleting: Bool) {
            byEntity[ObjectIdentifier(object.info), default: (object.info, [])].objects.append((object, deleting))
        }
        for id in updatedSet {
            guard let object = registered[id], !object.isDeleted, !object.isFault, object.committed != nil, id.primaryKey != nil,
                  !object.changedAttributes.isEmpty || !object.changedToOne.isEmpty else { continue }
            add(object, deleting: false)
        }
        // Under the other policies a delete goes ahead whatever the store changed: merging
        // a delete property by property has no meaning, and its cascades already ran.
        if policy == .error {
            for (id, object) in deletedSet where !object.isFault && id.primaryKey != nil { add(object, deleting: true) }
        }
        guard !byEntity.isEmpty else { return [] }

        let lock = db.dialect.rowLock
        var conflicts: [MergeConflict] = []
        var vanished: Set<ObjectID> = []
        var resolutions: [(ManagedObject, RowData, [Int], [Int])] = []
        for (info, objects) in byEntity.values {
            var stored: [Int64: RowData] = [:]
            for start in stride(from: 0, to: objects.count, by: Self.conflictReadChunk) {
                let chunk = objects[start..<min(start + Self.conflictReadChunk, objects.count)]
                let sql = "SELECT \(info.selectColumns) FROM \(info.table) WHERE \"_pk\" IN ("
                    + chunk.map { _ in "?" }.joined(separator: ", ") + ")" + lock
                try db.query(sql, chunk.map { .int($0.object.objectID.primaryKey!) }, cached: chunk.count == Self.conflictReadChunk) { row in
                    if let pk = row.key(0) { stored[pk] = readRow(row, info, from: 1) }
                }
            }
            for (object, deleting) in objects {
                let read = object.committed ?? RowData(values: object.values.array, toOne: object.toOne)
                guard let now = stored[object.objectID.primaryKey!] else {
                    // Gone from the store: a delete here agrees with it.
                    guard !deleting else { continue }
                    if policy == .storeTrump || policy == .rollback {
                        vanished.insert(object.objectID)
                    } else {
                        conflicts.append(MergeConflict(objectID: object.objectID, label: label(object), kind: .deletedInStore, properties: []))
                    }
                    continue
                }
                let attributes = info.attributes.indices.filter { !Value.sameWhenStored(read.values[$0], now.values[$0]) }
                let toOnes = info.toOneColumns.map(\.relationship).filter { read.toOne[$0]?.primaryKey != now.toOne[$0]?.primaryKey }
                guard !attributes.isEmpty || !toOnes.isEmpty else { continue }
                if policy == .error {
                    conflicts.append(describe(object, read: read, now: now, attributes: attributes, toOnes: toOnes, deleting: deleting))
                } else {
                    resolutions.append((object, now, attributes, toOnes))
                }
            }
        }
        if !conflicts.isEmpty {
            throw StoreError.mergeConflict(conflicts.sorted { ($0.objectID.entityName, $0.objectID.primaryKey!) < ($1.objectID.entityName, $1.objectID.primaryKey!) })
        }
        for (object, now, attributes, toOnes) in resolutions { resolve(object, to: now, attributes: attributes, toOnes: toOnes, policy: policy) }
        return vanished
    }

    /// Gives the object the stored values the policy lets win. Its snapshot becomes the
    /// stored row: a save that fails after this, tried again, does not meet the same conflict.
    private func resolve(_ object: ManagedObject, to now: RowData, attributes: [Int], toOnes: [Int], policy: MergePolicy) {
        switch policy {
        case .storeTrump:
            for index in attributes {
                object.values[index] = now.values[index]
                object.changedAttributes.remove(index)
            }
            for index in toOnes {
                object.toOne[index] = now.toOne[index]
                object.changedToOne.remove(index)
            }
        case .objectTrump:
            for index in attributes where !object.changedAttributes.contains(index) { object.values[index] = now.values[index] }
            for index in toOnes where !object.changedToOne.contains(index) { object.toOne[index] = now.toOne[index] }
        case .overwrite:
            // Written back to what the context read: changes of the row, for its history.
            for index in attributes { object.changedAttributes.insert(index) }
            for index in toOnes { object.changedToOne.insert(index) }
        case .error:
            break
        case .rollback:
            for index in 0..<object.values.count { object.values[index] = now.values[index] }
            for (index, _) in object.info.toOneColumns { object.toOne[index] = now.toOne[index] }
            object.changedAttributes = []
            object.changedToOne = []
            // Nothing of its row is written: not an update for the save's notice.
            updatedSet.remove(object.objectID)
        }
        object.committed = object.hasChanges ? now : nil
    }

    private func describe(_ object: ManagedObject, read: RowData, now: RowData, attributes: [Int], toOnes: [Int],
                          deleting: Bool) -> MergeConflict {
        func text(_ value: Value?) -> String { value?.description ?? "nil" }
        func text(_ id: ObjectID?) -> String {
            guard let id else { return "nil" }
            return id.primaryKey.map { "\(id.entityName) row \($0)" } ?? "a new \(id.entityName)"
        }
        let info = object.info
        var properties = attributes.map { index in
            MergeConflict.Property(name: info.attributeNames[index], read: text(read.values[index]), stored: text(now.values[index]),
                                   here: text(object.values[index]), changedHere: !deleting && object.changedAttributes.contains(index))
        }
        properties += toOnes.map { index in
            MergeConflict.Property(name: info.relationships[index].relationship.name, read: text(read.toOne[index]),
                                   stored: text(now.toOne[index]), here: text(object.toOne[index]),
                                   changedHere: !deleting && object.changedToOne.contains(index))
        }
        return MergeConflict(objectID: object.objectID, label: label(object), kind: deleting ? .deletedHere : .changedInBoth,
                             properties: properties)
    }
}

extension Value {
    /// Whether two values are the same once stored: dates to the microsecond (PostgreSQL's
    /// precision), NaN equal to NaN, decimals by number ("1.50" is "1.5").
    static func sameWhenStored(_ a: Value?, _ b: Value?) -> Bool {
        switch (a, b) {
        case (.date(let x)?, .date(let y)?):
            (x.timeIntervalSince1970 * 1_000_000).rounded() == (y.timeIntervalSince1970 * 1_000_000).rounded()
        case (.double(let x)?, .double(let y)?):
            x == y || (x.isNaN && y.isNaN)
        case (.decimal(let x)?, .decimal(let y)?):
            x == y || DecimalText.compare(x, y) == 0
        default:
            a == b
        }
    }
}
