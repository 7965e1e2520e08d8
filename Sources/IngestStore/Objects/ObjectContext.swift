import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A scratch pad of managed objects on one queue, in the manner of Core Data's
/// NSManagedObjectContext.
///
/// A `.privateQueue` context has its own serial queue; a `.main` context uses the main
/// queue. Everything about a context and its objects happens inside `performAndWait` or
/// `perform`; every entry point checks that, and traps naming the context when it is not so.
/// Not Sendable: pass `ObjectID`s between contexts, never objects.
public final class ObjectContext {
    public enum Kind: Sendable { case privateQueue, main }

    public let name: String
    public let kind: Kind
    public let coordinator: PersistentStoreCoordinator
    /// The context this one saves into, for a child context (Core Data's `parentContext`):
    /// it reads objects through the parent, unsaved changes included, and its `save()`
    /// hands its changes to the parent, whose own save writes them. Nil: saves go to the store.
    public let parentContext: ObjectContext?
    /// How `save()` resolves conflicts with the store and uniqueness conflicts. Default `.error`.
    public var mergePolicy: MergePolicy = .error
    /// The author the store's history records for this context's saves (Core Data's
    /// `transactionAuthor`); nil: the context's name.
    public var transactionAuthor: String?
    /// Records changes for `undo()` and `redo()` when set (nil by default, as Core Data's on iOS).
    public var undoManager: ContextUndoManager?
    /// `performAndWait` calls running inline on the queue, nested.
    @exclusivity(unchecked) var performDepth = 0
    /// On a PostgreSQL store: statements every save runs in its own transaction, after its
    /// rows (an importer's chunk marker and rejects, kept in tables of their own there).
    /// What it throws fails the save, which then writes nothing.
    package var postgresSaveHook: ((PostgresConnection) throws -> Void)?
    /// Called (on the context's queue) after its objects change: at the end of each
    /// `perform` (for a main context, also of each outermost `performAndWait`), after a
    /// save, after a merge.
    public var onObjectsDidChange: ((ObjectsDidChange) -> Void)? {
        didSet { tracksObjectChanges = onObjectsDidChange != nil || !objectChangeListeners.isEmpty }
    }
    /// Told what changed in memory, as `onObjectsDidChange` is, keyed by the listener's
    /// identity (fetched results controllers that show unsaved changes). Only the
    /// context's own changes: a merge reaches them through `changeListeners`.
    /// A listener returns false once its owner is gone, and is then dropped.
    @exclusivity(unchecked) var objectChangeListeners: [ObjectIdentifier: (ObjectsDidChange) -> Bool] = [:] {
        didSet { tracksObjectChanges = onObjectsDidChange != nil || !objectChangeListeners.isEmpty }
    }
    /// Whether anyone hears of changes in memory: `pendingDidChange` is kept only then.
    @exclusivity(unchecked) private(set) var tracksObjectChanges = false {
        didSet { confinement.tracksObjectChanges = tracksObjectChanges }
    }
    /// Called on the context's queue after each `mergeChanges(fromDidSave:)`, with the
    /// merged notice (for views that keep counts by object ID).
    public var onDidMerge: ((SaveNotice) -> Void)?

    let queue: DispatchQueue
    let confinement: QueueConfinement

    // Confined to the queue like the objects (see ManagedObject): no runtime exclusivity checks.
    @exclusivity(unchecked) var registered: [ObjectID: ManagedObject] = [:]
    @exclusivity(unchecked) var insertedList: [ManagedObject] = []
    @exclusivity(unchecked) var updatedSet: Set<ObjectID> = []
    @exclusivity(unchecked) var deletedSet: [ObjectID: ManagedObject] = [:]
    /// Objects whose to-many state is loaded or changed: what a save, a merge or a rollback
    /// resets, instead of every registered object (a context may hold hundreds of thousands).
    @exclusivity(unchecked) var toManyHolders: [ObjectIdentifier: ManagedObject] = [:]
    @exclusivity(unchecked) var joinChanges: [JoinChange: Bool] = [:]
    @exclusivity(unchecked) var stagedMetadata: [String: String] = [:]
    /// Placeholder marks the next save writes (`markPlaceholder`, `unmarkPlaceholder`).
    @exclusivity(unchecked) var placeholderMarks: [(object: ManagedObject, placeholder: Bool)] = []
    @exclusivity(unchecked) var pendingDidChange = ObjectsDidChange()
    var mergeObserverToken: UUID?
    @exclusivity(unchecked) private var lastEntity: EntityInfo?
    /// Called on the queue after each save of this context and each merge into it
    /// (fetched results controllers listen here), keyed by the listener's identity.
    @exclusivity(unchecked) var changeListeners: [ObjectIdentifier: (SaveNotice) -> Void] = [:]
    /// Temporary IDs of objects child contexts inserted here, until this context saves them,
    /// and then their permanent IDs: a child keeps the temporary ones (as Core Data's do).
    @exclusivity(unchecked) var childInsertedIDs: Set<ObjectID> = []
    @exclusivity(unchecked) var childPermanentIDs: [ObjectID: ObjectID] = [:]
    /// Whether a child has read from this context: a temporary ID it was given may be kept
    /// there, so every one this context replaces is remembered (in `childPermanentIDs`).
    @exclusivity(unchecked) var answersChildren = false
    /// Queries that read rows (fetches, batches, prefetches, faults firing): tests count them.
    @exclusivity(unchecked) var rowQueries = 0

    /// Makes a context. A `.main` context must be made on the main queue (the main actor).
    public convenience init(_ kind: Kind = .privateQueue, coordinator: PersistentStoreCoordinator, name: String? = nil) {
        self.init(kind, coordinator: coordinator, parent: nil, name: name ?? (kind == .main ? "main" : "private"))
    }

    /// Makes a child context of `parent` (Core Data's `parentContext`), a scratch pad over
    /// it: objects read through the parent, as it holds them, unsaved changes included;
    /// `save()` hands the changes to the parent, and a child never saved changes nothing.
    /// A child may itself be a parent. A `.main` child must be made on the main queue.
    public convenience init(_ kind: Kind = .privateQueue, parent: ObjectContext, name: String? = nil) {
        self.init(kind, coordinator: parent.coordinator, parent: parent, name: name ?? "\(parent.name)-child")
    }

    private init(_ kind: Kind, coordinator: PersistentStoreCoordinator, parent: ObjectContext?, name: String) {
        self.kind = kind
        self.coordinator = coordinator
        self.name = name
        parentContext = parent
        switch kind {
        case .privateQueue:
            queue = DispatchQueue(label: "ingest.context.\(name)")
        case .main:
            QueueConfinement.markMainQueue()
            guard QueueConfinement.isOnMainQueue else {
                fatalError("a main context must be made on the main queue (the main actor)")
            }
            queue = .main
        }
        confinement = QueueConfinement(name: name, isMain: kind == .main)
    }

    deinit {
        if let mergeObserverToken { coordinator.removeSaveObserver(mergeObserverToken) }
    }

    // MARK: - Objects

    /// The entity `name`, for the calls that throw: a fetch of an entity the model does not
    /// have fails as the store's other errors do, instead of trapping.
    /// - Throws: `StoreError.unknownEntity`.
    func knownEntity(_ name: String) throws -> EntityInfo {
        if let last = lastEntity, last.name == name { return last }
        guard coordinator.schema.entity(name) != nil else { throw StoreError.unknownEntity(name) }
        return entityInfo(name)
    }

    func entityInfo(_ name: String) -> EntityInfo {
        // Workers insert one entity many times in a row: remember the last one.
        if let last = lastEntity, last.name == name { return last }
        guard let info = coordinator.schema.entity(name) else { fatalError("the model has no entity '\(name)'") }
        lastEntity = info
        return info
    }

    /// A new object of `entity`, with its attributes' defaults, to be inserted at the next save.
    public func insert(_ entity: String) -> ManagedObject {
        checkAccess()
        let info = entityInfo(entity)
        guard !info.entity.isAbstract else {
            fatalError("entity \(entity) is abstract: insert one of its subentities (\(coordinator.schema.model.subentities(of: entity, includingItself: false).joined(separator: ", ")))")
        }
        let id = ObjectID.temporary(storeID: coordinator.storeID, entityName: info.rootName)
        let object = ManagedObject(id: id, info: info, context: self, fault: false)
        if !info.relationships.isEmpty {
            for index in info.relationships.indices where info.relationships[index].isToMany {
                object.toMany[index].committed = []
                if info.relationships[index].orderColumn != nil { object.toMany[index].order = [] }
            }
            toManyHolders[ObjectIdentifier(object)] = object
        }
        object.isInserted = true
        registered[id] = object
        insertedList.append(object)
        if tracksObjectChanges { pendingDidChange.inserted.insert(id) }
        undoRecorder?.record(.insert(object))
        lifecycle(info)?.awakeFromInsert?(object)
        return object
    }

    /// The object for `id`: the registered one, or a fault that loads its row when read.
    /// Does no I/O, except for an ID of an entity with subentities: the row says which
    /// entity the object is, so it is read then (and the fault holds it).
    public func object(with id: ObjectID) -> ManagedObject {
        checkAccess()
        let id = normalized(id)
        if let object = registered[id] { return object }
        if let object = hierarchyObject(id) { return object }
        let object = ManagedObject(id: id, info: entityInfo(id.entityName), context: self, fault: true)
        registered[id] = object
        return object
    }

    /// The object for an ID of an entity with subentities, made from its row (one query, as
    /// Core Data's foreign keys carry the entity beside the key); nil for any other ID, or
    /// when the row is gone (its fault then traps when fired, as any deleted row's does).
    private func hierarchyObject(_ id: ObjectID) -> ManagedObject? {
        let info = entityInfo(id.entityName)
        guard info.entityColumn != nil else { return nil }
        if parentContext != nil {
            do {
                return try hierarchyObjectThroughParent(id)
            } catch {
                fatalError("cannot read \(id) through the parent context: \(error)")
            }
        }
        guard let pk = id.primaryKey else { return nil }
        rowQueries += 1
        do {
            return try coordinator.reading { db in
                try materialize(db, "SELECT \(info.selectColumns) FROM \(info.table) WHERE \"_pk\" = ?", [.int(pk)], info).first
            }
        } catch {
            fatalError("cannot read \(id): \(error)")
        }
    }

    /// `id` naming its hierarchy's root, as the context keys objects (an ID parsed from a
    /// URI may name a subentity).
    func normalized(_ id: ObjectID) -> ObjectID {
        guard let info = coordinator.schema.entity(id.entityName), info.rootName != id.entityName else { return id }
        return ObjectID(storeID: id.storeID, entityName: info.rootName, key: id.key)
    }

    /// The object for `id`, loaded.
    /// - Throws: `StoreError.objectNotFound` when the store has no such row.
    public func existingObject(with id: ObjectID) throws -> ManagedObject {
        checkAccess()
        guard id.storeID == coordinator.storeID, coordinator.schema.entity(id.entityName) != nil else { throw StoreError.objectNotFound(id) }
        let id = normalized(id)
        if let object = registered[id] {
            if object.isDeleted { throw StoreError.objectNotFound(id) }
            if !object.isFault { return object }
        } else if entityInfo(id.entityName).entityColumn != nil {
            // Made from its row, when there is one.
            guard let object = hierarchyObject(id) else { throw StoreError.objectNotFound(id) }
            object.fireFault()
            return object
        }
        guard let row = try loadRowOrThrow(id, registered[id]?.info ?? entityInfo(id.entityName)) else { throw StoreError.objectNotFound(id) }
        let object = self.object(with: id)
        if object.isFault { object.apply(row) }
        return object
    }

    /// Marks `object` for deletion at the next save; its delete rules apply then.
    public func delete(_ object: ManagedObject) {
        delete(object, handedOver: false)
    }

    /// `handedOver`: a child's delete, whose `prepareForDeletion` ran in the child.
    func delete(_ object: ManagedObject, handedOver: Bool) {
        checkAccess()
        guard object.context === self else { fatalError("\(object.objectID) belongs to another context") }
        if object.isDetached { object.trapDetached() }
        guard !object.isDeleted else { return }
        if !handedOver { lifecycle(object.info)?.prepareForDeletion?(object) }
        if object.isInserted {
            insertedList.removeAll { $0 === object }
            registered[object.objectID] = nil
            object.isInserted = false
            object.isDeleted = true
            // An insert already told is told undone; one not told yet is never told.
            if tracksObjectChanges && pendingDidChange.inserted.remove(object.objectID) == nil { pendingDidChange.deleted.insert(object.objectID) }
            undoRecorder?.record(.discard(object))
            return
        }
        undoRecorder?.record(.delete(object, tracking(of: object)))
        object.isDeleted = true
        deletedSet[object.objectID] = object
        updatedSet.remove(object.objectID)
        if tracksObjectChanges { pendingDidChange.deleted.insert(object.objectID) }
    }

    func noteUpdated(_ object: ManagedObject) {
        guard !object.isInserted, !object.isDeleted else { return }
        // Listeners hear of every change, not only an object's first since the last save.
        if tracksObjectChanges { pendingDidChange.updated.insert(object.objectID) }
        guard updatedSet.insert(object.objectID).inserted else { return }
        undoRecorder?.record(.updated(object))
    }

    /// A change to an inserted object, for listeners that were told of its insert already.
    func noteInsertedChanged(_ object: ManagedObject) {
        guard !pendingDidChange.inserted.contains(object.objectID) else { return }
        pendingDidChange.updated.insert(object.objectID)
    }

    // MARK: - State

    public var hasChanges: Bool {
        checkAccess()
        return !insertedList.isEmpty || !updatedSet.isEmpty || !deletedSet.isEmpty || !joinChanges.isEmpty
    }

    public var insertedObjects: Set<ManagedObject> { checkAccess(); return Set(insertedList) }
    public var updatedObjects: Set<ManagedObject> { checkAccess(); return Set(updatedSet.compactMap { registered[$0] }) }
    public var deletedObjects: Set<ManagedObject> { checkAccess(); return Set(deletedSet.values) }
    public var registeredObjectCount: Int { checkAccess(); return registered.count }

    /// Stages `value` (as JSON) under `key` in the store's metadata; the next save writes
    /// it in the same transaction as its rows, or not at all.
    /// - Throws: an encoding error when `value` cannot be encoded.
    public func setMetadata(_ value: some Encodable, forKey key: String) throws {
        checkAccess()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        stagedMetadata[key] = String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Drops every registered object and every unsaved change: memory returns. A fetched
    /// results controller on the context holds dropped objects then: `performFetch()` again.
    /// (The tables keep their capacity, so a worker that resets after every save does
    /// not grow them again each time.) An object kept past the reset may still be read,
    /// but changing or deleting it traps, naming it: fetch it again to change it.
    public func reset() {
        checkAccess()
        postgresSaveHook = nil
        undoManager?.removeAllActions()
        // Objects kept past the reset must not take changes that no save would write.
        for object in registered.values { object.isDetached = true }
        for object in insertedList { object.isDetached = true }
        registered.removeAll(keepingCapacity: true)
        toManyHolders.removeAll(keepingCapacity: true)
        forgetChanges()
        pendingDidChange = ObjectsDidChange()
    }

    /// Undoes every unsaved change: inserted objects go, changed and deleted ones return
    /// to their saved state.
    public func rollback() {
        checkAccess()
        postgresSaveHook = nil
        undoManager?.removeAllActions()
        // Listeners hear it as any change: new objects gone (unless never told), the others as stored.
        var told = ObjectsDidChange()
        if tracksObjectChanges {
            for object in insertedList where !pendingDidChange.inserted.contains(object.objectID) { told.deleted.insert(object.objectID) }
            told.refreshed = updatedSet.union(deletedSet.keys)
        }
        for object in insertedList {
            registered[object.objectID] = nil
            object.isInserted = false
            object.isDeleted = true
        }
        for id in updatedSet.union(deletedSet.keys) {
            guard let object = registered[id] else { continue }
            object.isDeleted = false
            if let committed = object.committed {
                object.changedAttributes = []
                object.changedToOne = []
                object.apply(committed)
                object.committed = nil
            }
            for index in object.toMany.indices {
                object.toMany[index].added = []
                object.toMany[index].removed = []
            }
        }
        for object in toManyHolders.values {
            for index in object.toMany.indices {
                object.toMany[index].added = []
                object.toMany[index].removed = []
                // An ordered one reads its stored order again: the local one held undone changes.
                if object.toMany[index].order != nil { object.toMany[index] = ToManyState() }
            }
        }
        forgetChanges()
        pendingDidChange = told
    }

    /// Turns `object` back into a fault so it reloads; with `mergeChanges`, its unsaved
    /// changes are kept on top of the reloaded values.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        checkAccess()
        // The object reloads: changes recorded against what it held are void.
        undoManager?.drop(objects: [ObjectIdentifier(object)], deleted: [])
        guard !object.isInserted else { return }
        if mergeChanges && (object.hasChanges || object.hasUnsavedOrder) {
            if let row = loadRow(object.objectID, object.info) {
                object.apply(row)
                for index in object.toMany.indices { object.toMany[index].committed = nil }
            }
        } else {
            object.turnIntoFault()
            updatedSet.remove(object.objectID)
        }
    }

    /// Gives the inserted objects their permanent IDs now, before they are saved; in a
    /// child context, also objects already handed to the parent (which gets them there).
    /// - Throws: `StoreError.database` when the keys cannot be reserved.
    public func obtainPermanentIDs(for objects: [ManagedObject]) throws {
        checkAccess()
        // Objects change their IDs: recorded changes name the old ones.
        undoManager?.removeAllActions()
        let temporary = objects.filter { $0.objectID.isTemporary }
        var mapping: [ObjectID: ObjectID] = [:]
        // A child's objects handed to the parent already get theirs there, up the chain.
        let handed = parentContext == nil ? [] : temporary.filter { !$0.isInserted }.map(\.objectID)
        if !handed.isEmpty { mapping = try onParent { parent in try parent.permanentIDs(forChild: handed) } }
        for group in Dictionary(grouping: temporary.filter { mapping[$0.objectID] == nil }, by: { ObjectIdentifier($0.info) }).values {
            let entity = group[0].info.rootName
            let keys = try coordinator.reserveKeys(group.count, for: group[0].info)
            for (object, key) in zip(group, keys) {
                mapping[object.objectID] = ObjectID(storeID: coordinator.storeID, entityName: entity, key: .permanent(key))
            }
        }
        rekey(mapping)
    }

    /// Replaces object IDs everywhere in the context: the registry and every reference.
    func rekey(_ mapping: [ObjectID: ObjectID]) {
        guard !mapping.isEmpty else { return }
        var moved: [ManagedObject] = []
        for object in registered.values {
            if mapping[object.objectID] != nil { moved.append(object) }
            guard !object.info.relationships.isEmpty else { continue }
            for index in object.toOne.indices {
                if let id = object.toOne[index], let new = mapping[id] { object.toOne[index] = new }
                // The object as read names it too: a conflict check compares with what is stored now.
                if let id = object.committed?.toOne[index], let new = mapping[id] { object.committed!.toOne[index] = new }
            }
            for index in object.toMany.indices where !object.toMany[index].added.isEmpty
                || !object.toMany[index].removed.isEmpty || object.toMany[index].committed?.isEmpty == false {
                object.toMany[index].committed = object.toMany[index].committed.map { Set($0.map { mapping[$0] ?? $0 }) }
                object.toMany[index].added = Set(object.toMany[index].added.map { mapping[$0] ?? $0 })
                object.toMany[index].removed = Set(object.toMany[index].removed.map { mapping[$0] ?? $0 })
                object.toMany[index].order = object.toMany[index].order.map { $0.map { mapping[$0] ?? $0 } }
            }
        }
        for object in moved {
            registered[object.objectID] = nil
            // A child still names the object by the temporary ID it handed over.
            if answersChildren || !childInsertedIDs.isEmpty && childInsertedIDs.remove(object.objectID) != nil {
                childPermanentIDs[object.objectID] = mapping[object.objectID]!
            }
            object.objectID = mapping[object.objectID]!
        }
        for object in moved where registered[object.objectID] == nil { registered[object.objectID] = object }
        if !joinChanges.isEmpty {
            joinChanges = Dictionary(joinChanges.map { ($0.key.mapped(mapping), $0.value) }, uniquingKeysWith: { $1 })
        }
    }

    /// Forgets the lists of what changed (after a save, a hand-over to the parent, a reset or
    /// a rollback, which settle the objects themselves); the tables keep their capacity.
    func forgetChanges() {
        insertedList.removeAll(keepingCapacity: true)
        updatedSet.removeAll(keepingCapacity: true)
        deletedSet = [:]
        joinChanges = [:]
        stagedMetadata = [:]
        placeholderMarks = []
    }

    // MARK: - Change notices

    /// Posts what changed since the last notice to `onObjectsDidChange`, and to the
    /// listeners `local` (by default, the same).
    func processPendingChanges(local: ObjectsDidChange? = nil) {
        undoManager?.closeGroup()
        guard !pendingDidChange.isEmpty else { return }
        let notice = pendingDidChange
        pendingDidChange = ObjectsDidChange()
        onObjectsDidChange?(notice)
        guard !objectChangeListeners.isEmpty else { return }
        let local = local ?? notice
        guard !local.isEmpty else { return }
        var gone: [ObjectIdentifier] = []
        for (key, listener) in objectChangeListeners where !listener(local) { gone.append(key) }
        for key in gone { objectChangeListeners[key] = nil }
    }
}

/// What changed in a context's objects, in memory, since the last notice.
public struct ObjectsDidChange: Sendable, Equatable {
    public var inserted: Set<ObjectID> = []
    public var updated: Set<ObjectID> = []
    public var deleted: Set<ObjectID> = []
    /// Objects turned back into faults or dropped by a merge.
    public var refreshed: Set<ObjectID> = []
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty && refreshed.isEmpty }

    /// The same changes, with objects a save gave permanent IDs named by them.
    mutating func rename(_ pairs: [(old: ObjectID, new: ObjectID)]) {
        for (old, new) in pairs {
            if inserted.remove(old) != nil { inserted.insert(new) }
            if updated.remove(old) != nil { updated.insert(new) }
            if deleted.remove(old) != nil { deleted.insert(new) }
            if refreshed.remove(old) != nil { refreshed.insert(new) }
        }
    }
}

/// One row to add to or drop from a join table, by the IDs at its two ends.
struct JoinChange: Hashable {
    var table: String
    var a: ObjectID
    var b: ObjectID

    func mapped(_ mapping: [ObjectID: ObjectID]) -> JoinChange {
        JoinChange(table: table, a: mapping[a] ?? a, b: mapping[b] ?? b)
    }
}

@available(*, unavailable, message: "a context belongs to its queue; use perform { } and pass ObjectIDs")
extension ObjectContext: Sendable {}
