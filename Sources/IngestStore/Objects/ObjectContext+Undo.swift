extension ObjectContext {
    /// Takes back the last group of changes (see `ContextUndoManager`); nothing when there
    /// is none, or no undo manager.
    public func undo() {
        checkAccess()
        guard let manager = undoManager, let group = manager.takeUndo() else { return }
        replay(group.reversed(), forward: false, manager)
        manager.pushRedo(group)
    }

    /// Makes again the last group `undo()` took back.
    public func redo() {
        checkAccess()
        guard let manager = undoManager, let group = manager.takeRedo() else { return }
        replay(group, forward: true, manager)
        manager.pushUndo(group)
    }

    /// The undo manager, when it records (not while it replays).
    var undoRecorder: ContextUndoManager? {
        guard let undoManager, !undoManager.isReplaying else { return nil }
        return undoManager
    }

    func tracking(of object: ManagedObject) -> ContextUndoManager.Tracking {
        ContextUndoManager.Tracking(changedAttributes: object.changedAttributes, changedToOne: object.changedToOne,
                                    committed: object.committed, updated: updatedSet.contains(object.objectID))
    }

    /// Changes a to-many's members, recording the change.
    func changeToMany(_ object: ManagedObject, _ index: Int, _ change: (inout ToManyState) -> Void) {
        toManyHolders[ObjectIdentifier(object)] = object
        let ordered = object.info.relationships[index].orderColumn != nil
        // An ordered relationship's order is known once its stored members are read: first.
        if ordered && object.toMany[index].committed == nil { load(object, index) }
        if let recorder = undoRecorder {
            let before = object.toMany[index]
            change(&object.toMany[index])
            recorder.record(.toMany(object, index, before: before, after: object.toMany[index]))
        } else {
            change(&object.toMany[index])
        }
        // A new order is a change of the owner's (a move changes no link): the save writes it.
        if ordered && object.toMany[index].orderChanged && !object.isInserted { noteUpdated(object) }
    }

    private func restore(_ tracking: ContextUndoManager.Tracking, of object: ManagedObject) {
        object.changedAttributes = tracking.changedAttributes
        object.changedToOne = tracking.changedToOne
        object.committed = tracking.committed
        guard !object.isInserted, !object.isDeleted else { return }
        if tracking.updated { updatedSet.insert(object.objectID) } else { updatedSet.remove(object.objectID) }
    }

    /// Sets an attribute as a change against the saved state (a step recorded before a
    /// save): changed when it differs from the stored value, unchanged when it is that value.
    private func setAgainstSaved(_ object: ManagedObject, attribute index: Int, to value: Value?) {
        guard !object.isInserted else { object.values[index] = value; return }
        object.fireFault()
        if object.committed == nil { object.committed = RowData(values: object.values.array, toOne: object.toOne) }
        object.values[index] = value
        if object.committed!.values[index] == value { object.changedAttributes.remove(index) } else { object.changedAttributes.insert(index) }
        retrack(object)
    }

    /// Sets a to-one as a change against the saved state (see `setAgainstSaved(_:attribute:to:)`).
    private func setAgainstSaved(_ object: ManagedObject, toOne index: Int, to id: ObjectID?) {
        guard !object.isInserted else { object.toOne[index] = id; return }
        object.fireFault()
        if object.committed == nil { object.committed = RowData(values: object.values.array, toOne: object.toOne) }
        object.toOne[index] = id
        if object.committed!.toOne[index] == id { object.changedToOne.remove(index) } else { object.changedToOne.insert(index) }
        retrack(object)
    }

    /// Whether the save writes the object, from what differs from its saved state.
    private func retrack(_ object: ManagedObject) {
        guard !object.isDeleted else { return }
        if object.changedAttributes.isEmpty && object.changedToOne.isEmpty {
            object.committed = nil
            updatedSet.remove(object.objectID)
        } else {
            updatedSet.insert(object.objectID)
        }
    }

    private func reinsert(_ object: ManagedObject) {
        object.isInserted = true
        object.isDeleted = false
        registered[object.objectID] = object
        insertedList.append(object)
        if tracksObjectChanges { pendingDidChange.inserted.insert(object.objectID) }
    }

    private func discard(_ object: ManagedObject) {
        insertedList.removeAll { $0 === object }
        registered[object.objectID] = nil
        object.isInserted = false
        object.isDeleted = true
        if tracksObjectChanges { pendingDidChange.inserted.remove(object.objectID) }
    }

    /// What a replayed step changed, for `onObjectsDidChange`: an object back in the context
    /// is inserted, one gone from it deleted, any other changed one updated.
    private func noteReplayed(_ step: ContextUndoManager.Step, forward: Bool) {
        func changed(_ object: ManagedObject) {
            guard !object.isDeleted, !pendingDidChange.inserted.contains(object.objectID) else { return }
            pendingDidChange.updated.insert(object.objectID)
        }
        func arrived(_ object: ManagedObject) {
            if pendingDidChange.deleted.remove(object.objectID) == nil { pendingDidChange.inserted.insert(object.objectID) }
        }
        func left(_ object: ManagedObject) {
            pendingDidChange.updated.remove(object.objectID)
            if pendingDidChange.inserted.remove(object.objectID) == nil { pendingDidChange.deleted.insert(object.objectID) }
        }
        switch step {
        case .value(let object, _, _, _, _, _), .toOne(let object, _, _, _, _, _), .toMany(let object, _, _, _), .updated(let object),
             .members(let object, _, _, _):
            changed(object)
        case .join, .link, .transient:
            break
        case .insert(let object), .savedInsert(let object):
            forward ? arrived(object) : left(object)
        case .discard(let object), .delete(let object, _):
            forward ? left(object) : arrived(object)
        }
    }

    private func replay<S: Sequence>(_ steps: S, forward: Bool, _ manager: ContextUndoManager) where S.Element == ContextUndoManager.Step {
        manager.isReplaying = true
        defer { manager.isReplaying = false }
        for step in steps {
            switch step {
            case .value(let object, let index, let before, let after, let old, let new):
                if let tracking = forward ? new : old {
                    object.values[index] = forward ? after : before
                    restore(tracking, of: object)
                } else {
                    setAgainstSaved(object, attribute: index, to: forward ? after : before)
                }
            case .toOne(let object, let index, let before, let after, let old, let new):
                if let tracking = forward ? new : old {
                    object.toOne[index] = forward ? after : before
                    restore(tracking, of: object)
                } else {
                    setAgainstSaved(object, toOne: index, to: forward ? after : before)
                }
            case .transient(let object, let index, let before, let after):
                object.transients[index] = forward ? after : before
            case .toMany(let object, let index, let before, let after):
                object.toMany[index] = forward ? after : before
                toManyHolders[ObjectIdentifier(object)] = object
            case .join(let change, let before, let after):
                joinChanges[change] = forward ? after : before
            case .insert(let object):
                if forward { reinsert(object) } else { discard(object) }
            case .discard(let object):
                if forward { discard(object) } else { reinsert(object) }
            case .updated(let object):
                if forward { updatedSet.insert(object.objectID) } else { updatedSet.remove(object.objectID) }
            case .delete(let object, let tracking):
                if forward {
                    object.isDeleted = true
                    deletedSet[object.objectID] = object
                    updatedSet.remove(object.objectID)
                } else {
                    object.isDeleted = false
                    deletedSet[object.objectID] = nil
                    if tracking?.updated ?? (!object.changedAttributes.isEmpty || !object.changedToOne.isEmpty) {
                        updatedSet.insert(object.objectID)
                    }
                }
            case .savedInsert(let object):
                // Undone, a saved insert is a delete the next save makes.
                object.isDeleted = !forward
                deletedSet[object.objectID] = forward ? nil : object
                if !forward { updatedSet.remove(object.objectID) }
            case .members(let object, let index, let added, let removed):
                toManyHolders[ObjectIdentifier(object)] = object
                for id in forward ? removed : added { object.toMany[index].remove(id) }
                for id in forward ? added : removed { object.toMany[index].insert(id) }
            case .link(let change, let linked):
                let wanted = forward ? linked : !linked
                joinChanges[change] = joinChanges[change] == !wanted ? nil : wanted
                for id in [change.a, change.b] {
                    if let object = registered[id], !object.isInserted, !object.isDeleted { updatedSet.insert(id) }
                }
            }
            if tracksObjectChanges { noteReplayed(step, forward: forward) }
        }
        processPendingChanges()
    }
}
