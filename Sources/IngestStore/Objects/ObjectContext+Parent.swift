/// Child contexts (Core Data's `parentContext`), reading: a child never reads the store
/// itself. Its fetches, faults and to-many relationships are answered by its parent, on
/// the parent's queue, from the objects as the parent holds them, unsaved changes
/// included, and so on up the chain to the context that reads the store.
extension ObjectContext {
    /// One object as a parent hands it to a child: plain values, which cross queues.
    struct ParentSnapshot: Sendable {
        var id: ObjectID
        /// The object's own entity (a subentity's rows differ from its root's).
        var entity: String
        var row: RowData
    }

    /// Runs `body` on the parent's queue, waiting for it. The child's queue waits meanwhile,
    /// so a parent must not wait on its child's queue in turn (as in Core Data).
    func onParent<T>(_ body: (ObjectContext) throws -> T) rethrows -> T {
        let parent = parentContext!
        return try parent.performAndWait {
            parent.answersChildren = true
            return try body(parent)
        }
    }

    // MARK: - What a child asks (on the child's queue)

    /// The objects of a parent's fetch, registered in this context and filled from the
    /// parent's values; firing them reads nothing.
    func fetchThroughParent(_ ask: (ObjectContext) throws -> [ManagedObject]) throws -> [ManagedObject] {
        let snapshots = try onParent { parent in try ask(parent).map { parent.snapshot(of: $0) } }
        return snapshots.map(object(from:))
    }

    /// The row of `id` as the parent holds it; nil when the parent deleted it or has none.
    func rowThroughParent(_ id: ObjectID) throws -> RowData? {
        try onParent { parent in try parent.snapshot(for: id) }?.row
    }

    /// The object for `id` of an entity with subentities, made from the parent's (which
    /// knows its entity); nil when the parent has no such object.
    func hierarchyObjectThroughParent(_ id: ObjectID) throws -> ManagedObject? {
        try onParent { parent in try parent.snapshot(for: id) }.map(object(from:))
    }

    /// The members of a to-many relationship as the parent holds them (in order, for an
    /// ordered one).
    func membersThroughParent(of object: ManagedObject, _ index: Int) -> [ObjectID] {
        let id = object.objectID
        return onParent { parent in parent.membersForChild(of: id, index) }
    }

    /// The registered object for a parent's snapshot, or a new fault filled with it.
    private func object(from snapshot: ParentSnapshot) -> ManagedObject {
        let object: ManagedObject
        if let registeredObject = registered[snapshot.id] {
            object = registeredObject
        } else {
            object = ManagedObject(id: snapshot.id, info: entityInfo(snapshot.entity), context: self, fault: true)
            registered[snapshot.id] = object
        }
        if object.isFault && !object.preloaded {
            for index in 0..<object.values.count { object.values[index] = snapshot.row.values[index] }
            for index in object.toOne.indices { object.toOne[index] = snapshot.row.toOne[index] }
            object.preloaded = true
        }
        return object
    }

    // MARK: - What a parent answers (on the parent's queue)

    /// `id` as this context knows it: a temporary ID a child kept for an object this
    /// context has saved since names the object's permanent ID now.
    func currentID(_ id: ObjectID) -> ObjectID {
        let id = normalized(id)
        guard id.isTemporary, registered[id] == nil else { return id }
        return childPermanentIDs[id] ?? id
    }

    /// An object of this context's, as a child reads it.
    func snapshot(of object: ManagedObject) -> ParentSnapshot {
        if object.isFault && !object.preloaded { object.fireFault() }
        return ParentSnapshot(id: object.objectID, entity: object.info.name,
                              row: RowData(values: object.values.array, toOne: object.toOne))
    }

    /// The object `id` as a child reads it, under the ID the child knows; nil when this
    /// context deleted it or the store has no such row.
    func snapshot(for childID: ObjectID) throws -> ParentSnapshot? {
        let id = currentID(childID)
        var result: ParentSnapshot
        if let object = registered[id] {
            if object.isDeleted { return nil }
            if object.isFault && !object.preloaded {
                // Read without firing the fault: a child's read is no reason to hold the values here.
                guard let row = try loadRowOrThrow(id, object.info) else { return nil }
                result = ParentSnapshot(id: id, entity: object.info.name, row: row)
            } else {
                result = snapshot(of: object)
            }
        } else if coordinator.schema.entity(id.entityName)?.entityColumn != nil {
            guard let object = try hierarchyObjectForChild(id) else { return nil }
            result = snapshot(of: object)
        } else {
            let info = entityInfo(id.entityName)
            guard let row = try loadRowOrThrow(id, info) else { return nil }
            result = ParentSnapshot(id: id, entity: info.name, row: row)
        }
        result.id = normalized(childID)
        return result
    }

    private func hierarchyObjectForChild(_ id: ObjectID) throws -> ManagedObject? {
        if parentContext != nil { return try hierarchyObjectThroughParent(id) }
        return try existingObjectOrNil(id)
    }

    private func existingObjectOrNil(_ id: ObjectID) throws -> ManagedObject? {
        do {
            return try existingObject(with: id)
        } catch StoreError.objectNotFound {
            return nil
        }
    }

    /// Permanent IDs for objects a child handed here under temporary IDs, obtained here
    /// (and further up) for those not saved yet.
    /// - Throws: `StoreError` when the keys cannot be reserved.
    func permanentIDs(forChild ids: [ObjectID]) throws -> [ObjectID: ObjectID] {
        var result: [ObjectID: ObjectID] = [:]
        var unsaved: [(ObjectID, ManagedObject)] = []
        for id in ids {
            if let permanent = childPermanentIDs[id] {
                result[id] = permanent
            } else if let object = registered[id] {
                unsaved.append((id, object))
            }
        }
        try obtainPermanentIDs(for: unsaved.map(\.1))
        for (id, object) in unsaved where !object.objectID.isTemporary {
            result[id] = object.objectID
            childInsertedIDs.remove(id)
            childPermanentIDs[id] = object.objectID
        }
        return result
    }

    /// The members of one of this context's objects, as a child reads them.
    func membersForChild(of childID: ObjectID, _ index: Int) -> [ObjectID] {
        let id = currentID(childID)
        guard let object = registered[id] ?? (id.isTemporary ? nil : object(with: id)), !object.isDeleted else { return [] }
        // Members deleted here are gone for a child, as `existingObject` has them.
        func live(_ id: ObjectID) -> Bool { registered[id]?.isDeleted != true }
        if object.info.relationships[index].orderColumn != nil { return orderedMembers(of: object, index).filter(live) }
        return members(of: object, index).filter(live)
    }
}
