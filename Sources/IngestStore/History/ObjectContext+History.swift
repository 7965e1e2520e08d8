extension ObjectContext {
    /// Brings saves read from the store's history into this context, as
    /// `mergeChanges(fromDidSave:)` brings a save of this process: updated objects
    /// registered here reload, deleted ones leave, fetched results controllers on the
    /// context update. Transactions are applied in order: an object inserted and then
    /// deleted among them is only deleted.
    public func mergeChanges(fromHistory transactions: [HistoryTransaction]) {
        checkAccess()
        guard let last = transactions.last else { return }
        var inserted = Set<ObjectID>()
        var updated = Set<ObjectID>()
        var deleted = Set<ObjectID>()
        for transaction in transactions {
            for change in transaction.changes {
                switch change.kind {
                case .insert:
                    inserted.insert(change.objectID)
                    deleted.remove(change.objectID)
                case .update:
                    if !inserted.contains(change.objectID) { updated.insert(change.objectID) }
                case .delete:
                    if inserted.remove(change.objectID) == nil { deleted.insert(change.objectID) }
                    updated.remove(change.objectID)
                }
            }
        }
        mergeChanges(fromDidSave: SaveNotice(inserted: inserted, updated: updated, deleted: deleted,
                                             sequence: Int(truncatingIfNeeded: last.position), contextName: last.author,
                                             contextIdentity: nil))
    }
}
