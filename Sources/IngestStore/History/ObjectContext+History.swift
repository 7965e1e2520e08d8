extension ObjectContext {
    /// Brings saves read from the store's history into this context, as
    /// `mergeChanges(fromDidSave:)` brings a save of this process: updated objects
    /// registered here reload, deleted ones leave, fetched results controllers on the
    /// context update.
    ///
    /// The same change may come twice (a consumer takes its token before it fetches what it
    /// starts from, so saves in between come again): an insert of an object this context
    /// holds already is merged as an update, and an object deleted after an insert among
    /// `transactions` is merged as deleted.
    public func mergeChanges(fromHistory transactions: [HistoryTransaction]) {
        checkAccess()
        guard let last = transactions.last else { return }
        var inserted = Set<ObjectID>()
        var updated = Set<ObjectID>()
        var deleted = Set<ObjectID>()
        for transaction in transactions {
            for change in transaction.changes {
                let id = change.objectID
                switch change.kind {
                case .insert:
                    if registered[id] != nil { updated.insert(id) } else { inserted.insert(id) }
                case .update:
                    updated.insert(id)
                case .delete:
                    inserted.remove(id)
                    updated.remove(id)
                    deleted.insert(id)
                }
            }
        }
        mergeChanges(fromDidSave: SaveNotice(inserted: inserted, updated: updated, deleted: deleted,
                                             sequence: Int(truncatingIfNeeded: last.position), contextName: last.author,
                                             contextIdentity: nil))
    }
}
