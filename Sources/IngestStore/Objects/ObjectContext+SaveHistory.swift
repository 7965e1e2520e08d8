/// What a save records in the store's history.
extension ObjectContext {
    /// What the save changes, for its history transaction: new rows, updated objects with
    /// the properties they changed, deleted ones with their uniqueness key values.
    func historyChanges(fresh: [ManagedObject], plan: SavePlan, unlinked: [(entity: String, pk: Int64, relationship: String)],
                                key: (ObjectID?) -> Int64?) -> HistoryChanges {
        var changes = HistoryChanges()
        // The other side of each to-one a save sets or changes: its to-many (or to-one) inverse changed too.
        var otherSides: [(entity: String, pk: Int64, relationship: String)] = []
        func noteOtherSides(_ object: ManagedObject, _ index: Int, old: ObjectID?) {
            let relationship = object.info.relationships[index]
            for target in [old, object.toOne[index]] {
                guard let target, let pk = key(target) else { continue }
                otherSides.append((relationship.destinationRoot, pk, relationship.inverseName))
            }
        }
        for object in fresh {
            guard let pk = (object.savedID ?? object.objectID).primaryKey else { continue }
            changes.add(object.info.name, .insert, row: pk)
            for (index, _) in object.info.toOneColumns where object.toOne[index] != nil { noteOtherSides(object, index, old: nil) }
        }
        for (object, policy) in plan.merged where policy != .rollback && policy != .error {
            guard let pk = object.savedID?.primaryKey else { continue }
            let info = object.info
            // Object trump writes the whole row (its key is the stored one's); store trump only fills empty links.
            let keys = Set(info.uniquenessPositions.joined())
            var properties = policy.writesObject ? info.attributeNames.indices.filter { !keys.contains($0) }.map { info.attributeNames[$0] } : []
            properties += info.toOneColumns
                .filter { policy.writesObject || object.toOne[$0.relationship] != nil }
                .map { info.relationships[$0.relationship].relationship.name }
            if !properties.isEmpty { changes.add(info.name, .update, row: pk, properties: properties) }
        }
        // Faults too: a many-to-many change between two objects not loaded fires neither fault.
        var updated: [ObjectID: [String]] = [:]
        for id in updatedSet {
            guard let object = registered[id], !object.isDeleted, id.primaryKey != nil, !plan.vanished.contains(id) else { continue }
            let info = object.info
            var properties = info.attributeNames.indices.filter { object.changedAttributes.contains($0) }.map { info.attributeNames[$0] }
            for (index, relationship) in info.relationships.enumerated()
            where object.changedToOne.contains(index)
                || (index < object.toMany.count && !(object.toMany[index].added.isEmpty && object.toMany[index].removed.isEmpty
                                                      && !object.toMany[index].orderChanged)) {
                properties.append(relationship.relationship.name)
                if object.changedToOne.contains(index), case .column = relationship.storage {
                    noteOtherSides(object, index, old: object.committed?.toOne[index])
                }
            }
            if !properties.isEmpty { updated[id] = properties }
        }
        // Other sides and unlinked rows not deleted by this save, merged into the updates they join.
        var skipped = Set(deletedSet.keys).union(plan.vanished)
        for object in fresh { skipped.insert(object.savedID ?? object.objectID) }
        for (entity, pk, relationship) in otherSides + unlinked {
            let id = ObjectID(storeID: coordinator.storeID, entityName: entity, key: .permanent(pk))
            guard !skipped.contains(id) else { continue }
            if updated[id]?.contains(relationship) != true { updated[id, default: []].append(relationship) }
        }
        for (id, properties) in updated.sorted(by: { ($0.key.entityName, $0.key.primaryKey!) < ($1.key.entityName, $1.key.primaryKey!) }) {
            changes.add(registered[id]?.info.name ?? id.entityName, .update, row: id.primaryKey!, properties: properties)
        }
        for (id, object) in deletedSet {
            guard let pk = id.primaryKey else { continue }
            // The key as stored: an edit made before the delete never reached the store.
            let stored = object.committed?.values ?? object.values.array
            var tombstone: [String: Value] = [:]
            for positions in object.info.uniquenessPositions {
                for position in positions { tombstone[object.info.attributeNames[position]] = stored[position] }
            }
            changes.addDelete(object.info.name, row: pk, tombstone: tombstone)
        }
        return changes
    }
}
