/// What a save's transaction decided, applied to the context once it has committed.
struct SavePlan {
    var mapping: [ObjectID: ObjectID] = [:]
    /// Inserted objects that became an existing row, by merge policy.
    var merged: [(object: ManagedObject, policy: MergePolicy)] = []
    var inserted: Set<ObjectID> = []
    var updated: Set<ObjectID> = []
    var deleted: Set<ObjectID> = []
    /// Updated objects whose rows another writer deleted, given up by the merge policy.
    var vanished: Set<ObjectID> = []
    var sequence = 0
}

extension ObjectContext {
    /// Writes every change — inserts, updates, deletes, relationship changes and staged
    /// metadata — in ONE transaction, then tells the coordinator's observers. A child
    /// context (`parentContext`) hands its changes to its parent instead, which takes them
    /// as its own unsaved changes; the parent's save writes them.
    ///
    /// Delete rules run first, then each object's `willSave` (`EntityLifecycle`), then
    /// validation (required attributes, value types, attribute rules, deny rules, the
    /// entities' `validateFor…`); uniqueness conflicts resolve by `mergePolicy`; after the
    /// commit, each object's `didSave`. Changes to transient attributes alone write nothing.
    /// - Throws: `StoreError.validation` or `.uniquenessConflict` (nothing written);
    ///   `StoreError.database` when SQLite fails (nothing written); for a child,
    ///   `StoreError.mergeConflict` when the parent changed an object it changed (under
    ///   `.error`) or deleted it (under `.error`, `.objectTrump`, `.overwrite`), and what the
    ///   parent's reads throw; nothing is handed over then.
    public func save() throws {
        checkAccess()
        guard hasChanges || !stagedMetadata.isEmpty || postgresSaveHook != nil else { return }
        // A hook belongs to one save, whether it commits or not.
        defer { postgresSaveHook = nil }
        // Delete rules change objects on the save's behalf: not the user's changes to undo. A
        // save that fails after them leaves those changes, and the history cannot take them back.
        let recording = undoManager.map { !$0.isReplaying } ?? false
        let rulesRun = !deletedSet.isEmpty
        undoManager?.isReplaying = true
        var withHooks: [ManagedObject] = []
        do {
            try applyDeleteRules()
            withHooks = runWillSave()
            try validate()
            if recording { undoManager?.isReplaying = false }
        } catch {
            if recording { undoManager?.isReplaying = false }
            if rulesRun { undoManager?.removeAllActions() }
            throw error
        }
        if parentContext != nil {
            do {
                try saveIntoParent()
            } catch {
                if rulesRun { undoManager?.removeAllActions() }
                throw error
            }
            for object in withHooks { lifecycle(object.info)?.didSave?(object) }
            return
        }
        // An ordered relationship read again after a merge takes its merged order now, before
        // the transaction (reading goes through another connection): the save writes it.
        for object in toManyHolders.values where coordinator.schema.hasOrderedRelationships
            && object.hasUnsavedOrder && !object.objectID.isTemporary && !object.isInserted {
            for index in object.toMany.indices where object.toMany[index].orderChanged && object.toMany[index].committed == nil {
                load(object, index)
            }
        }
        let policy = mergePolicy
        nonisolated(unsafe) let context = self
        let plan: SavePlan
        do {
            plan = try coordinator.writing { connection in try context.writeChanges(connection, policy: policy) }
        } catch {
            // The transaction rolled back: the keys it handed out were never used.
            for object in insertedList { object.savedID = nil }
            if rulesRun { undoManager?.removeAllActions() }
            throw error
        }
        finishSave(plan)
        for object in withHooks { lifecycle(object.info)?.didSave?(object) }
    }

    // MARK: - The transaction

    private enum Target {
        case row(Int64)
        case object(ManagedObject)
    }

    /// A constraint's values: the same constraint for an entity and the subentities that
    /// inherit it (one hierarchy's attribute names are unique, so its columns name it).
    private struct UniqueKey: Hashable {
        var root: String
        var columns: [String]
        var values: [Value]

        /// `id = "p1", …`, as conflict messages give the key.
        var description: String {
            zip(columns, values).map { "\($0) = \($1)" }.joined(separator: ", ")
        }
    }

    private func writeChanges(_ db: StoreConnection, policy: MergePolicy) throws -> SavePlan {
        var plan = SavePlan()
        // The temporary → permanent table is needed only where IDs are referred to:
        // relationships, or objects merged onto rows by the merge policy.
        let needsMapping = coordinator.schema.hasRelationships
        var conflicts: [String] = []
        var seen: [UniqueKey: ManagedObject] = [:]
        var fresh: [ManagedObject] = []
        var mergedTargets: [(ManagedObject, Target)] = []
        // A server answers one query per save for the stored rows of every inserted object
        // (a round trip per object costs more); SQLite looks each up in place.
        let batched = db.dialect == .postgres
        // SQLite's rows are bound and stepped in place (`SQLiteRows`), without the
        // statement-by-statement work of `StoreConnection`, on the path every save takes.
        var sqliteRows: SQLiteRows? = if case .sqlite(let database) = db.kind { SQLiteRows(database) } else { nil }
        let stored = batched ? try storedRows(for: insertedList, db) : [:]

        // 1. Uniqueness: which inserted objects are rows that exist already.
        for object in insertedList {
            var target: Target?
            var conflicting: UniqueKey?
            for (constraintIndex, positions) in object.info.uniquenessPositions.enumerated() {
                var values: [Value] = []
                values.reserveCapacity(positions.count)
                for position in positions {
                    guard let value = object.values[position] else { break }
                    values.append(value)
                }
                guard values.count == positions.count else { continue }
                let key = UniqueKey(root: object.info.rootName, columns: object.info.uniquenessConstraints[constraintIndex], values: values)
                conflicting = key
                if let earlier = seen[key] {
                    target = .object(earlier)
                } else if let pk = batched ? stored[StoredKey(object.info, constraint: constraintIndex, values: values)]
                                           : try sqliteRows!.lookUp(object.info.uniqueLookupSQL[constraintIndex], values) {
                    target = .row(pk)
                } else {
                    seen[key] = object
                    continue
                }
                break
            }
            guard let target else {
                fresh.append(object)
                continue
            }
            // A key held by an object of another entity of the hierarchy: no policy merges two entities.
            let otherEntity: String? = switch target {
            case .object(let earlier): earlier.info === object.info ? nil : earlier.info.name
            case .row(let pk): try storedEntity(of: pk, object.info, db).flatMap { $0 == object.info.name ? nil : $0 }
            }
            let description = conflicting!.description
            if let otherEntity {
                let other = switch target {
                case .row(let pk): "the stored \(otherEntity) row \(pk)"
                case .object(let earlier): "\(earlier.objectID), a \(otherEntity) inserted in the same save,"
                }
                conflicts.append("\(label(object)) has \(description), as \(other) does; no merge policy makes one entity's object another's")
                continue
            }
            if policy == .error {
                let other = switch target {
                case .row(let pk): "the stored \(object.info.name) row \(pk)"
                case .object(let earlier): "\(earlier.objectID), inserted in the same save"
                }
                conflicts.append("\(object.objectID) has \(description), as \(other) does")
            } else {
                mergedTargets.append((object, target))
            }
        }
        if !conflicts.isEmpty { throw StoreError.uniquenessConflict(conflicts) }
        plan.vanished = try resolveStoreConflicts(db, policy: policy)
        plan.deleted = plan.vanished

        // 2. Keys for the new rows.
        for group in Dictionary(grouping: fresh.filter(\.objectID.isTemporary), by: { ObjectIdentifier($0.info) }).values {
            let entity = group[0].info.rootName
            let keys = try coordinator.reserveKeys(group.count, for: group[0].info, db)
            for (object, key) in zip(group, keys) {
                let id = ObjectID(storeID: coordinator.storeID, entityName: entity, key: .permanent(key))
                object.savedID = id
                if needsMapping { plan.mapping[object.objectID] = id }
            }
        }
        for (object, target) in mergedTargets {
            switch target {
            case .row(let pk):
                object.savedID = ObjectID(storeID: coordinator.storeID, entityName: object.info.rootName, key: .permanent(pk))
            case .object(let earlier):
                object.savedID = earlier.savedID ?? earlier.objectID
            }
            plan.mapping[object.objectID] = object.savedID
            plan.merged.append((object, policy))
        }
        // A constant copy: a nested function capturing `plan` itself would box it, and
        // every access after that would go through the box.
        let mapping = plan.mapping
        func key(_ id: ObjectID?) -> Int64? {
            guard let id else { return nil }
            // A mapped ID first: an object given a permanent ID early (obtainPermanentIDs) may yet merge onto a stored row.
            if !mapping.isEmpty, let mapped = mapping[id] { return mapped.primaryKey }
            return id.primaryKey
        }

        // 3. Rows.
        if batched {
            try insertRows(fresh, db) { row($0, key: key) }
        } else {
            for object in fresh { try sqliteRows!.insert(object, key: key) }
        }
        for (object, policy) in plan.merged {
            let finalID = object.savedID!
            let pk = finalID.primaryKey!
            switch policy {
            case .objectTrump, .overwrite:
                try update(object, pk: pk, db, sqliteRows, key: key)
            case .storeTrump:
                for (relationship, column) in object.info.toOneColumns {
                    guard let target = key(object.toOne[relationship]) else { continue }
                    try db.execute("UPDATE \(object.info.table) SET \(quoted(column)) = coalesce(\(quoted(column)), ?) WHERE \"_pk\" = ?",
                                   [.int(target), .int(pk)])
                }
            case .rollback, .error:
                break
            }
            plan.updated.insert(finalID)
        }
        for id in updatedSet {
            guard let object = registered[id], !object.isDeleted, !plan.vanished.contains(id) else { continue }
            plan.updated.insert(id)
            guard !object.isFault, !object.changedAttributes.isEmpty || !object.changedToOne.isEmpty,
                  let pk = id.primaryKey else { continue }
            guard try update(object, pk: pk, db, sqliteRows, key: key) > 0 else { throw StoreError.objectNotFound(id) }
        }
        // Rows a delete changes besides its own (links set to NULL, join rows gone), for history.
        var unlinked: [(entity: String, pk: Int64, relationship: String)]? = coordinator.recordsHistory ? [] : nil
        for (id, object) in deletedSet {
            guard let pk = id.primaryKey else { continue }
            try deleteRow(object.info, pk: pk, db, unlinked: &unlinked)
            plan.deleted.insert(id)
        }
        for (change, inserted) in joinChanges {
            guard let a = key(change.a), let b = key(change.b) else { continue }
            let sql = inserted
                ? "INSERT INTO \(quoted(change.table)) (\"_a\", \"_b\") VALUES (?, ?) ON CONFLICT DO NOTHING"
                : "DELETE FROM \(quoted(change.table)) WHERE \"_a\" = ? AND \"_b\" = ?"
            try db.execute(sql, [.int(a), .int(b)])
        }
        try writePositions(db, plan: plan, key: key)

        try writePlaceholderMarks(db, key: key)

        // 4. Metadata and history, in the same transaction as the rows they describe.
        // An import's own statements in the save's transaction (its lease and counts): the
        // PostgreSQL run store's, written on its connection; SQLite runs keep theirs in metadata.
        if case .postgres(let connection) = db.kind, let postgresSaveHook { try postgresSaveHook(connection) }
        let history = coordinator.recordsHistory ? historyChanges(fresh: fresh, plan: plan, unlinked: unlinked ?? [], key: key) : nil
        plan.sequence = try coordinator.finishSave(db, metadata: stagedMetadata, history: history, author: transactionAuthor ?? name)
        return plan
    }

    /// An object's attribute values, then its to-one keys: a row in column order.
    private func row(_ object: ManagedObject, key: (ObjectID?) -> Int64?) -> [Value?] {
        var row: [Value?] = []
        row.reserveCapacity(object.info.attributes.count + object.info.toOneColumns.count + 1)
        object.values.withUnsafeBufferPointer { row.append(contentsOf: $0) }
        for (relationship, _) in object.info.toOneColumns {
            row.append(key(object.toOne[relationship]).map(Value.int))
        }
        return row
    }

    /// Writes an object's row over row `pk`; the number of rows changed (0: it is gone).
    @discardableResult
    private func update(_ object: ManagedObject, pk: Int64, _ db: StoreConnection, _ sqliteRows: SQLiteRows?,
                        key: (ObjectID?) -> Int64?) throws -> Int {
        let info = object.info
        guard !(info.attributes.isEmpty && info.toOneColumns.isEmpty) else { return 1 }
        if let sqliteRows { return try sqliteRows.update(object, pk: pk, key: key) }
        return try db.execute(info.updateSQL, row(object, key: key) + [.int(pk)])
    }

    /// Deletes a row and every reference to it: foreign keys pointing at it become NULL,
    /// its join-table rows go.
    /// `unlinked`, when history is recorded, gets the rows whose link to it went, with the
    /// relationship that changed.
    private func deleteRow(_ info: EntityInfo, pk: Int64, _ db: StoreConnection,
                           unlinked: inout [(entity: String, pk: Int64, relationship: String)]?) throws {
        try db.execute(info.deleteSQL, [.int(pk)])
        for relationship in info.relationships {
            let destination = entityInfo(relationship.destination)
            let inverse = destination.relationships[destination.relationshipIndex[relationship.inverseName]!]
            let sql: String
            switch inverse.storage {
            case .column(let column):
                // A position among the deleted owner's members goes with the link.
                let position = relationship.orderColumn.map { ", \(quoted($0)) = NULL" } ?? ""
                sql = "UPDATE \(destination.table) SET \(quoted(column)) = NULL\(position) WHERE \(quoted(column)) = ?"
                    + (unlinked == nil ? "" : " RETURNING \"_pk\"")
            case .joinTable(let table, let source, let other):
                sql = "DELETE FROM \(quoted(table)) WHERE \(quoted(other)) = ?" + (unlinked == nil ? "" : " RETURNING \(quoted(source))")
            case .inverseColumn:
                continue
            }
            guard unlinked != nil else {
                try db.execute(sql, [.int(pk)])
                continue
            }
            for row in try db.int64s(sql, [.int(pk)]) { unlinked!.append((destination.rootName, row, relationship.inverseName)) }
        }
    }

    // MARK: - After the commit

    private func finishSave(_ plan: SavePlan) {
        var plan = plan
        let merged = Set(plan.merged.map { ObjectIdentifier($0.object) })
        let mapping = plan.mapping
        let fixReferences = !mapping.isEmpty
        let observed = coordinator.hasSaveObservers || !changeListeners.isEmpty
        if observed { plan.inserted.reserveCapacity(insertedList.count) }
        for object in insertedList where observed && !merged.contains(ObjectIdentifier(object)) {
            plan.inserted.insert(object.savedID ?? object.objectID)
        }
        // Only what the save touched (new, changed and deleted objects, holders of to-many
        // state), not the whole registry: a context may hold many more objects than a save
        // changes. Only a changed object can refer to a new one's temporary ID.
        func settle(_ object: ManagedObject) {
            object.isInserted = false
            if fixReferences && !object.info.relationships.isEmpty {
                for index in object.toOne.indices {
                    if let id = object.toOne[index], let new = mapping[id] { object.toOne[index] = new }
                }
            }
            if !object.changedAttributes.isEmpty { object.changedAttributes = [] }
            if !object.changedToOne.isEmpty { object.changedToOne = [] }
            object.committed = nil
        }
        var moved: [ManagedObject] = []
        var renamed: [(old: ObjectID, new: ObjectID)] = []
        for object in insertedList {
            if let saved = object.savedID {
                if answersChildren || !childInsertedIDs.isEmpty && childInsertedIDs.remove(object.objectID) != nil {
                    childPermanentIDs[object.objectID] = saved
                }
                if registered[object.objectID] === object { registered[object.objectID] = nil }
                if tracksObjectChanges { renamed.append((old: object.objectID, new: saved)) }
                object.objectID = saved
                object.savedID = nil
                moved.append(object)
            }
            settle(object)
        }
        for id in updatedSet { if let object = registered[id] { settle(object) } }
        for object in deletedSet.values { settle(object) }
        for object in toManyHolders.values {
            settle(object)
            for index in object.toMany.indices { object.toMany[index] = ToManyState() }
        }
        toManyHolders.removeAll(keepingCapacity: true)
        // An object merged onto a row that this context already holds yields to it.
        for object in moved where !merged.contains(ObjectIdentifier(object)) { registered[object.objectID] = object }
        for object in moved where merged.contains(ObjectIdentifier(object)) && registered[object.objectID] == nil {
            registered[object.objectID] = object
        }
        // Changes not told yet name new objects as they are named now.
        if !pendingDidChange.isEmpty && !renamed.isEmpty { pendingDidChange.rename(renamed) }
        for (object, policy) in plan.merged where !policy.writesObject { object.turnIntoFault() }
        for id in plan.vanished {
            registered[id]?.isDeleted = true
            if tracksObjectChanges { pendingDidChange.deleted.insert(id) }
        }
        for id in plan.deleted { registered[id] = nil }
        forgetChanges()
        // The undo history stays, against the saved state; what the save deleted or merged
        // onto other rows cannot come back (see ContextUndoManager).
        if let undoManager {
            undoManager.settle(mapping: mapping) { object in
                plan.deleted.contains(object.objectID) || merged.contains(ObjectIdentifier(object))
            }
        }
        processPendingChanges()
        guard observed else { return }
        let notice = SaveNotice(inserted: plan.inserted, updated: plan.updated, deleted: plan.deleted,
                                sequence: plan.sequence, contextName: name, contextIdentity: ObjectIdentifier(self))
        for listener in changeListeners.values { listener(notice) }
        coordinator.post(notice)
    }
}
