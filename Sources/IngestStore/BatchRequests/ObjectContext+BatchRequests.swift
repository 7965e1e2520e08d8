extension ObjectContext {
    /// Runs a batch delete in the store (see `BatchDeleteRequest`), as this context's
    /// transaction author, then merges what it changed into this context: its deleted
    /// objects leave it, objects whose links to them were cleared refresh. (Core Data's
    /// contexts do not merge their own batch requests; this one does, as it merges its own
    /// saves.) Other contexts merge `result.changes` themselves, or automatically.
    /// - Throws: as `PersistentStoreCoordinator.execute(_:)`; nothing changed then.
    @discardableResult
    public func execute(_ request: BatchDeleteRequest) throws -> BatchRequestResult {
        checkAccess()
        let result = try coordinator.run(request, author: transactionAuthor ?? name, contextName: name,
                                         contextIdentity: ObjectIdentifier(self))
        mergeOwnBatch(result.changes)
        return result
    }

    /// Runs a batch update in the store (see `BatchUpdateRequest`), as this context's
    /// transaction author, then merges it into this context: updated objects it holds
    /// reload their values (keeping its own unsaved changes on top).
    /// - Throws: as `PersistentStoreCoordinator.execute(_:)`; nothing changed then.
    @discardableResult
    public func execute(_ request: BatchUpdateRequest) throws -> BatchRequestResult {
        checkAccess()
        let result = try coordinator.run(request, author: transactionAuthor ?? name, contextName: name,
                                         contextIdentity: ObjectIdentifier(self))
        mergeOwnBatch(result.changes)
        return result
    }

    private func mergeOwnBatch(_ changes: SaveNotice) {
        guard !changes.updated.isEmpty || !changes.deleted.isEmpty else { return }
        mergeChanges(fromDidSave: changes)
    }

    /// Merges changes made elsewhere (a batch request's `changes`, another coordinator's
    /// save) into each of `contexts`, on its own queue, waiting for each: Core Data's
    /// `NSManagedObjectContext.mergeChanges(fromRemoteContextSave:into:)`.
    public static func mergeChanges(fromRemoteContextSave changes: SaveNotice, into contexts: [ObjectContext]) {
        for context in contexts {
            context.performAndWait { context.mergeChanges(fromDidSave: changes) }
        }
    }
}
