import Foundation

/// What an importer running on a coordinator it was given (a container's) needs of it:
/// the PostgreSQL URL to connect its own workers with, and save notices for the saves it
/// makes on those connections, so the coordinator's contexts merge them as any other save.
extension PersistentStoreCoordinator {
    /// The PostgreSQL database the store is in, password included (`path` leaves it out);
    /// nil for a SQLite store or one in memory.
    package var postgresURL: PostgresURL? {
        (store as? PostgresPersistentStore)?.pool.url
    }

    /// Tells this coordinator's observers about a save that committed on a connection of
    /// the caller's own (a PostgreSQL batch write), from what it changed: its rows as object
    /// IDs, inserted or updated.
    package func postSave(_ changes: HistoryChanges, contextName: String) {
        guard hasSaveObservers, !changes.isEmpty else { return }
        var inserted = Set<ObjectID>()
        var updated = Set<ObjectID>()
        var deleted = Set<ObjectID>()
        for group in changes.order {
            // IDs name their hierarchy's root, as every ID does.
            let entity = schema.entity(group.entity)?.rootName ?? group.entity
            let ids = changes.groups[group, default: []].map { ObjectID(storeID: storeID, entityName: entity, key: .permanent($0)) }
            switch group.kind {
            case .insert: inserted.formUnion(ids)
            case .update: updated.formUnion(ids)
            case .delete: deleted.formUnion(ids)
            }
        }
        for tombstone in changes.tombstones {
            let entity = schema.entity(tombstone.entity)?.rootName ?? tombstone.entity
            deleted.insert(ObjectID(storeID: storeID, entityName: entity, key: .permanent(tombstone.pk)))
        }
        // A row inserted and then changed by a later record of the same write is new to the observer.
        updated.subtract(inserted)
        post(SaveNotice(inserted: inserted, updated: updated, deleted: deleted, sequence: nextSaveSequence(),
                        contextName: contextName, contextIdentity: nil))
    }
}
