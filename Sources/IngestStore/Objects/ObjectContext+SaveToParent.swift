/// Child contexts, saving: a child's `save()` hands its changes to its parent as plain
/// values, and the parent takes them as changes of its own, which its save writes (or
/// hands on, for a parent that is itself a child). Nothing reaches the store until the
/// context at the top of the chain saves.
///
/// Conflicts: the child keeps each changed object as it read it from the parent. When
/// the parent has changed that object since, the child's merge policy decides, as it
/// would against the store: `.error` throws `StoreError.mergeConflict` and hands over
/// nothing; `.objectTrump` writes the properties the child changed, `.storeTrump` keeps
/// the parent's where both changed, `.overwrite` writes the child's object whole,
/// `.rollback` drops the child's changes to it.
extension ObjectContext {
    /// One object's changes as a child hands them over.
    struct HandedObject: Sendable {
        var id: ObjectID
        var entity: String
        var isInserted: Bool
        var values: [Value?]
        var toOne: [ObjectID?]
        /// What the child changed (everything, for an inserted object).
        var changedAttributes: [Int]
        var changedToOne: [Int]
        var toMany: [HandedMembers]
        /// The object as the child read it, when it changed attributes or to-one links.
        var read: RowData?
    }

    struct HandedMembers: Sendable {
        var index: Int
        var added: Set<ObjectID>
        var removed: Set<ObjectID>
        /// The new order of an ordered relationship whose order changed.
        var order: [ObjectID]?
    }

    struct HandedChanges: Sendable {
        var objects: [HandedObject] = []
        var deleted: [(id: ObjectID, read: RowData?)] = []
        var metadata: [String: String] = [:]
        var placeholders: [(id: ObjectID, placeholder: Bool)] = []
        var childName: String
    }

    /// What the parent gave up of a child's changes, by the merge policy: the child reads
    /// those objects again.
    struct HandOverOutcome: Sendable {
        var reread: [ObjectID] = []
        var goneInParent: [ObjectID] = []
    }

    // MARK: - The child's side

    /// Hands every change to the parent, then holds the objects as saved (against the
    /// parent). Delete rules, `willSave` and validation already ran.
    /// - Throws: `StoreError.mergeConflict` under `.error` when the parent changed an
    ///   object this context changed; nothing is handed over then.
    func saveIntoParent() throws {
        guard postgresSaveHook == nil else {
            fatalError("ObjectContext '\(name)': a save hook needs a context that saves to the store, not a child")
        }
        let changes = handedChanges()
        let policy = mergePolicy
        let outcome = try onParent { parent in try parent.take(changes, policy: policy) }
        settleAfterHandOver(outcome)
    }

    private func handedChanges() -> HandedChanges {
        var changes = HandedChanges(childName: name)
        // An object inserted and deleted here before this save is no one's member or target.
        func live(_ id: ObjectID) -> Bool { !id.isTemporary || registered[id] != nil }
        func toMany(_ object: ManagedObject) -> [HandedMembers] {
            object.toMany.indices.compactMap { index in
                let state = object.toMany[index]
                guard !state.added.isEmpty || !state.removed.isEmpty || state.orderChanged else { return nil }
                return HandedMembers(index: index, added: state.added.filter(live), removed: state.removed.filter(live),
                                     order: state.orderChanged ? state.order?.filter(live) : nil)
            }
        }
        var handed = Set<ObjectIdentifier>()
        func hand(_ object: ManagedObject) {
            guard handed.insert(ObjectIdentifier(object)).inserted, !object.isDeleted else { return }
            let all = Array(0..<object.values.count)
            let changedAttributes = object.isInserted ? all : all.filter(object.changedAttributes.contains)
            let changedToOne = object.isInserted ? Array(object.toOne.indices).filter { object.toOne[$0] != nil }
                : object.toOne.indices.filter(object.changedToOne.contains)
            let links = toMany(object)
            guard object.isInserted || !changedAttributes.isEmpty || !changedToOne.isEmpty || !links.isEmpty else { return }
            changes.objects.append(HandedObject(
                id: object.objectID, entity: object.info.name, isInserted: object.isInserted,
                values: object.values.array, toOne: object.toOne.map { $0.flatMap { live($0) ? $0 : nil } }, changedAttributes: changedAttributes,
                changedToOne: changedToOne, toMany: links, read: object.isInserted ? nil : object.committed))
        }
        for object in insertedList { hand(object) }
        for id in updatedSet { if let object = registered[id], !object.isFault { hand(object) } }
        for object in toManyHolders.values { hand(object) }
        changes.deleted = deletedSet.map { (id: $0.key, read: $0.value.isFault ? nil : $0.value.committed ?? RowData(values: $0.value.values.array, toOne: $0.value.toOne)) }
        changes.metadata = stagedMetadata
        changes.placeholders = placeholderMarks.map { (id: $0.object.objectID, placeholder: $0.placeholder) }
        return changes
    }

    /// After the parent took the changes: objects are as saved, IDs stay (a new object's
    /// temporary ID included, as in Core Data: `obtainPermanentIDs` gives it its key).
    private func settleAfterHandOver(_ outcome: HandOverOutcome) {
        let notice = SaveNotice(inserted: Set(insertedList.map(\.objectID)), updated: updatedSet, deleted: Set(deletedSet.keys),
                                sequence: 0, contextName: name, contextIdentity: ObjectIdentifier(self))
        for object in insertedList { object.isInserted = false }
        for object in insertedList + updatedSet.compactMap({ registered[$0] }) + Array(toManyHolders.values) {
            object.changedAttributes = []
            object.changedToOne = []
            object.committed = nil
            // Members are read from the parent again, which holds them now.
            for index in object.toMany.indices { object.toMany[index] = ToManyState() }
        }
        toManyHolders.removeAll(keepingCapacity: true)
        let deleted = Set(deletedSet.keys).union(outcome.goneInParent)
        for id in deleted { registered[id]?.isDeleted = true; registered[id] = nil }
        for id in outcome.reread { registered[id]?.turnIntoFault() }
        forgetChanges()
        undoManager?.settle(mapping: [:]) { deleted.contains($0.objectID) }
        processPendingChanges()
        for listener in changeListeners.values { listener(notice) }
    }

    // MARK: - The parent's side

    /// Takes a child's changes as this context's own, after resolving conflicts by `policy`.
    /// - Throws: `StoreError.mergeConflict` under `.error`; nothing is changed then.
    func take(_ changes: HandedChanges, policy: MergePolicy) throws -> HandOverOutcome {
        var outcome = HandOverOutcome()
        // 1. Conflicts: the objects as the child read them against the objects here now.
        var conflicts: [MergeConflict] = []
        var resolved: [ObjectID: (now: RowData, attributes: [Int], toOnes: [Int])] = [:]
        for handed in changes.objects where !handed.isInserted {
            guard let read = handed.read else { continue }
            guard let now = try snapshot(for: handed.id)?.row else {
                if policy == .error || policy == .objectTrump || policy == .overwrite {
                    conflicts.append(MergeConflict(objectID: handed.id, label: Self.label(handed.entity, handed.id), kind: .deletedInParent, properties: []))
                } else {
                    outcome.goneInParent.append(handed.id)
                }
                continue
            }
            let info = entityInfo(handed.entity)
            let attributes = info.attributes.indices.filter { !Value.sameWhenStored(read.values[$0], now.values[$0]) }
            let toOnes = info.toOneColumns.map(\.relationship).filter { read.toOne[$0].map(currentID) != now.toOne[$0] }
            guard !attributes.isEmpty || !toOnes.isEmpty else { continue }
            if policy == .error {
                conflicts.append(Self.parentConflict(handed, info, read: read, now: now, attributes: attributes, toOnes: toOnes, deleting: false))
            } else {
                resolved[handed.id] = (now, attributes, toOnes)
            }
        }
        if policy == .error {
            for (id, read) in changes.deleted {
                guard let read, let now = try snapshot(for: id)?.row else { continue }
                let info = entityInfo(id.entityName)
                let attributes = info.attributes.indices.filter { !Value.sameWhenStored(read.values[$0], now.values[$0]) }
                let toOnes = info.toOneColumns.map(\.relationship).filter { read.toOne[$0].map(currentID) != now.toOne[$0] }
                guard !attributes.isEmpty || !toOnes.isEmpty else { continue }
                let handed = HandedObject(id: id, entity: info.name, isInserted: false, values: read.values, toOne: read.toOne,
                                          changedAttributes: [], changedToOne: [], toMany: [], read: read)
                conflicts.append(Self.parentConflict(handed, info, read: read, now: now, attributes: attributes, toOnes: toOnes, deleting: true))
            }
        }
        if !conflicts.isEmpty { throw StoreError.mergeConflict(conflicts) }

        // 2. New objects first, so that links to them resolve here.
        for handed in changes.objects where handed.isInserted { adoptInserted(handed) }
        // 3. Changed objects, by policy where this context changed them too.
        for handed in changes.objects where !handed.isInserted && !outcome.goneInParent.contains(handed.id) {
            let object = self.object(with: currentID(handed.id))
            guard !object.isDeleted else { continue }
            var attributes = handed.changedAttributes
            var toOnes = handed.changedToOne
            if let conflict = resolved[handed.id] {
                outcome.reread.append(handed.id)
                switch policy {
                case .rollback:
                    (attributes, toOnes) = ([], [])
                case .storeTrump:
                    attributes.removeAll(where: conflict.attributes.contains)
                    toOnes.removeAll(where: conflict.toOnes.contains)
                case .overwrite:
                    attributes = Array(handed.values.indices)
                    toOnes = object.info.toOneColumns.map(\.relationship)
                case .objectTrump, .error:
                    break
                }
                if policy == .rollback { continue }
            }
            for index in attributes { object.setValue(handed.values[index], forAttributeAt: index) }
            for index in toOnes { object.setToOne(index, to: handed.toOne[index].map { self.object(with: currentID($0)) }, updateInverse: false) }
        }
        // 4. To-many links, after every object they name is here.
        for handed in changes.objects where !outcome.goneInParent.contains(handed.id) && !(resolved[handed.id] != nil && policy == .rollback) {
            let object = self.object(with: currentID(handed.id))
            guard !object.isDeleted else { continue }
            for links in handed.toMany { take(links, of: object) }
        }
        // 5. Deletes: the child ran the delete rules and `prepareForDeletion` already.
        for (id, _) in changes.deleted {
            let object = self.object(with: currentID(id))
            delete(object, handedOver: true)
        }
        stagedMetadata.merge(changes.metadata) { $1 }
        for (id, placeholder) in changes.placeholders {
            placeholderMarks.append((object: object(with: currentID(id)), placeholder: placeholder))
        }
        return outcome
    }

    /// A child's new object, under the child's ID (temporary, or permanent from
    /// `obtainPermanentIDs`); `awakeFromInsert` ran in the child.
    private func adoptInserted(_ handed: HandedObject) {
        let info = entityInfo(handed.entity)
        let object = ManagedObject(id: handed.id, info: info, context: self, fault: false)
        for index in handed.values.indices { object.values[index] = handed.values[index] }
        for index in handed.toOne.indices { object.toOne[index] = handed.toOne[index].map(currentID) }
        for index in info.relationships.indices where info.relationships[index].isToMany {
            object.toMany[index].committed = []
            if info.relationships[index].orderColumn != nil { object.toMany[index].order = [] }
        }
        if !info.relationships.isEmpty { toManyHolders[ObjectIdentifier(object)] = object }
        object.isInserted = true
        registered[handed.id] = object
        insertedList.append(object)
        if handed.id.isTemporary { childInsertedIDs.insert(handed.id) }
        if tracksObjectChanges { pendingDidChange.inserted.insert(handed.id) }
        undoRecorder?.record(.insert(object))
    }

    /// A child's change to one to-many relationship, against the members here now: a
    /// member added here meanwhile is not added twice. Join rows are noted from one end.
    private func take(_ links: HandedMembers, of object: ManagedObject) {
        let current = members(of: object, links.index)
        let added = links.added.map(currentID).filter { !current.contains($0) }
        let removed = links.removed.map(currentID).filter { current.contains($0) }
        if !added.isEmpty || !removed.isEmpty {
            changeToMany(object, links.index) { state in
                for id in added { state.insert(id) }
                for id in removed { state.remove(id) }
            }
        }
        if case .joinTable(_, let source, _) = object.info.relationships[links.index].storage, source == "_a" {
            for id in added { noteJoinChange(object, links.index, self.object(with: id), inserted: true) }
            for id in removed { noteJoinChange(object, links.index, self.object(with: id), inserted: false) }
        }
        if let order = links.order?.map(currentID) {
            changeToMany(object, links.index) { state in
                let members = Set(state.order ?? [])
                var placed = Set<ObjectID>()
                var newOrder = order.filter { members.contains($0) && placed.insert($0).inserted }
                newOrder += (state.order ?? []).filter { !placed.contains($0) }
                state.order = newOrder
                state.orderChanged = true
            }
        }
    }

    /// "Photo 17" for a stored object, "a new Photo" for one not saved yet.
    private static func label(_ entity: String, _ id: ObjectID) -> String {
        id.primaryKey.map { "\(entity) \($0)" } ?? "a new \(entity)"
    }

    private static func parentConflict(_ handed: HandedObject, _ info: EntityInfo, read: RowData, now: RowData,
                                       attributes: [Int], toOnes: [Int], deleting: Bool) -> MergeConflict {
        func text(_ value: Value?) -> String { value?.description ?? "nil" }
        func text(_ id: ObjectID?) -> String {
            guard let id else { return "nil" }
            return id.primaryKey.map { "\(id.entityName) row \($0)" } ?? "a new \(id.entityName)"
        }
        var properties = attributes.map { index in
            MergeConflict.Property(name: info.attributeNames[index], read: text(read.values[index]), stored: text(now.values[index]),
                                   here: text(handed.values[index]), changedHere: handed.changedAttributes.contains(index))
        }
        properties += toOnes.map { index in
            MergeConflict.Property(name: info.relationships[index].relationship.name, read: text(read.toOne[index]),
                                   stored: text(now.toOne[index]), here: text(handed.toOne[index]),
                                   changedHere: handed.changedToOne.contains(index))
        }
        return MergeConflict(objectID: handed.id, label: Self.label(info.name, handed.id),
                             kind: deleting ? .deletedInChild : .changedInParent, properties: properties)
    }
}
