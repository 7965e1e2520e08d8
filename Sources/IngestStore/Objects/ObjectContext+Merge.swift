import Dispatch

extension ObjectContext {
    /// Brings another context's save into this one: updated objects registered here
    /// reload (keeping this context's own unsaved changes on top), deleted ones leave
    /// the context, inserted ones are reachable by ID. `onObjectsDidChange` then reports
    /// the notice's IDs.
    public func mergeChanges(fromDidSave notice: SaveNotice) {
        checkAccess()
        // Objects that reload from the store or leave the context: changes recorded against
        // what they held are void. Other objects' stay (see ContextUndoManager).
        if let undoManager {
            var void = Set<ObjectIdentifier>()
            for id in notice.updated.union(notice.deleted) { if let object = registered[id] { void.insert(ObjectIdentifier(object)) } }
            undoManager.drop(objects: void, deleted: notice.deleted)
        }
        var change = ObjectsDidChange()
        for id in notice.updated {
            guard let object = registered[id] else { continue }
            if object.hasChanges || object.hasUnsavedOrder {
                refresh(object, mergeChanges: true)
            } else {
                object.turnIntoFault()
            }
            change.refreshed.insert(id)
        }
        for id in notice.deleted {
            guard let object = registered.removeValue(forKey: id) else { continue }
            object.isDeleted = true
            updatedSet.remove(id)
            deletedSet[id] = nil
            change.deleted.insert(id)
        }
        // Relationship members may have changed with any of these rows: reload them when next read.
        if !notice.inserted.isEmpty || !notice.deleted.isEmpty || !notice.updated.isEmpty {
            // Not an inserted object's: it has no stored members to read.
            for object in toManyHolders.values where !object.isInserted {
                for index in object.toMany.indices where object.toMany[index].committed != nil && !object.objectID.isTemporary {
                    object.toMany[index].committed = nil
                }
            }
        }
        change.inserted = notice.inserted
        change.updated = notice.updated.subtracting(change.refreshed)
        // Usually nothing is pending: the sets are taken as they are, not hashed again one by
        // one (a batch save's notice holds thousands of IDs; 940 instructions a record).
        func add(_ ids: Set<ObjectID>, to pending: inout Set<ObjectID>) {
            if pending.isEmpty { pending = ids } else { pending.formUnion(ids) }
        }
        // Listeners of the context's own changes hear only those: the merge reaches them below.
        let local = pendingDidChange
        add(change.inserted, to: &pendingDidChange.inserted)
        add(change.updated, to: &pendingDidChange.updated)
        add(change.deleted, to: &pendingDidChange.deleted)
        add(change.refreshed, to: &pendingDidChange.refreshed)
        processPendingChanges(local: local)
        for listener in changeListeners.values { listener(notice) }
        onDidMerge?(notice)
    }

    /// When true, every save of another context on this coordinator is merged into this
    /// one on its own queue (for a main context, on the main queue), as it happens.
    public var automaticallyMergesChangesFromCoordinator: Bool {
        get { checkAccess(); return mergeObserverToken != nil }
        set {
            checkAccess()
            if newValue, mergeObserverToken == nil {
                let target = WeakContext(self)
                let queue = self.queue
                mergeObserverToken = coordinator.addSaveObserver { notice in
                    guard notice.contextIdentity != target.identity else { return }
                    queue.async { target.perform { $0.mergeChanges(fromDidSave: notice) } }
                }
            } else if !newValue, let token = mergeObserverToken {
                coordinator.removeSaveObserver(token)
                mergeObserverToken = nil
            }
        }
    }
}

/// Lets a save observer reach a context on the context's own queue without keeping it alive.
final class WeakContext: @unchecked Sendable {
    // Read only on the context's queue (see automaticallyMergesChangesFromCoordinator).
    private weak var context: ObjectContext?
    let identity: ObjectIdentifier

    init(_ context: ObjectContext) {
        self.context = context
        identity = ObjectIdentifier(context)
    }

    /// Runs `body` with the context, already on its queue, if it still exists.
    func perform(_ body: (ObjectContext) -> Void) {
        guard let context else { return }
        context.runOnQueue { body(context) }
    }
}
