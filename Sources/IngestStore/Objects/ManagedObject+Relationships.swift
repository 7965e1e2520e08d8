extension ManagedObject {
    /// The object a to-one relationship points at, or nil.
    public func object(forKey key: String) -> ManagedObject? {
        let index = relationshipIndex(key, toMany: false)
        context.checkAccess()
        fireFault()
        return toOne[index].map { context.object(with: $0) }
    }

    /// Points a to-one relationship at `target` (or at nothing); the inverse on the old
    /// and the new target follows.
    public func setObject(_ target: ManagedObject?, forKey key: String) {
        let index = relationshipIndex(key, toMany: false)
        context.checkAccess()
        if isDetached { trapDetached() }
        if let target { checkSameContext(target, key) }
        setToOne(index, to: target, updateInverse: true)
    }

    /// The members of a to-many relationship: in order for an ordered one (Core Data's
    /// `NSOrderedSet`), otherwise in no particular order.
    public func objects(forKey key: String) -> [ManagedObject] {
        let index = relationshipIndex(key, toMany: true)
        context.checkAccess()
        if info.relationships[index].orderColumn != nil {
            return context.orderedMembers(of: self, index).map { context.object(with: $0) }
        }
        return context.members(of: self, index).map { context.object(with: $0) }
    }

    /// Puts `member` at `index` of an ordered to-many relationship (at the end when `index`
    /// is past it), adding it when it is not a member yet; its inverse follows.
    public func insertObject(_ member: ManagedObject, at index: Int, forKey key: String) {
        let relationshipIndex = relationshipIndex(key, toMany: true)
        context.checkAccess()
        if isDetached { trapDetached() }
        guard info.relationships[relationshipIndex].orderColumn != nil else {
            fatalError("\(info.name).\(key) is not ordered: use addObject(_:toKey:)")
        }
        addObject(member, toKey: key)
        context.changeToMany(self, relationshipIndex) { $0.move(member.objectID, to: index) }
    }

    /// The IDs of a to-many relationship's members, without loading them.
    public func objectIDs(forKey key: String) -> Set<ObjectID> {
        let index = relationshipIndex(key, toMany: true)
        context.checkAccess()
        return context.members(of: self, index)
    }

    /// Adds `member` to a to-many relationship; its inverse follows.
    public func addObject(_ member: ManagedObject, toKey key: String) {
        let index = relationshipIndex(key, toMany: true)
        context.checkAccess()
        if isDetached { trapDetached() }
        checkSameContext(member, key)
        let relationship = info.relationships[index]
        let inverse = member.info.relationshipIndex[relationship.inverseName]!
        if member.info.relationships[inverse].isToMany {
            guard !context.members(of: self, index).contains(member.objectID) else { return }
            context.changeToMany(self, index) { $0.insert(member.objectID) }
            context.changeToMany(member, inverse) { $0.insert(objectID) }
            context.noteJoinChange(self, index, member, inserted: true)
        } else {
            member.setToOne(inverse, to: self, updateInverse: true)
        }
    }

    /// Removes `member` from a to-many relationship; its inverse follows.
    public func removeObject(_ member: ManagedObject, fromKey key: String) {
        let index = relationshipIndex(key, toMany: true)
        context.checkAccess()
        if isDetached { trapDetached() }
        checkSameContext(member, key)
        let relationship = info.relationships[index]
        let inverse = member.info.relationshipIndex[relationship.inverseName]!
        if member.info.relationships[inverse].isToMany {
            guard context.members(of: self, index).contains(member.objectID) else { return }
            context.changeToMany(self, index) { $0.remove(member.objectID) }
            context.changeToMany(member, inverse) { $0.remove(objectID) }
            context.noteJoinChange(self, index, member, inserted: false)
        } else {
            member.fireFault()
            if member.toOne[inverse] == objectID { member.setToOne(inverse, to: nil, updateInverse: true) }
        }
    }

    // MARK: - Keeping inverses in step

    func setToOne(_ index: Int, to target: ManagedObject?, updateInverse: Bool) {
        fireFault()
        let old = toOne[index]
        guard old != target?.objectID else { return }
        let before = context.undoRecorder.map { _ in context.tracking(of: self) }
        noteChange()
        toOne[index] = target?.objectID
        changedToOne.insert(index)
        if let before { context.undoRecorder?.record(.toOne(self, index, before: old, after: toOne[index], before, context.tracking(of: self))) }
        guard updateInverse else { return }
        let relationship = info.relationships[index]
        let destination = context.entityInfo(relationship.destination)
        let inverse = destination.relationshipIndex[relationship.inverseName]!
        let inverseIsToMany = destination.relationships[inverse].isToMany
        if let old {
            let previous = context.object(with: old)
            if inverseIsToMany {
                context.changeToMany(previous, inverse) { $0.remove(objectID) }
            } else {
                previous.setToOne(inverse, to: nil, updateInverse: false)
            }
        }
        if let target {
            if inverseIsToMany {
                context.changeToMany(target, inverse) { $0.insert(objectID) }
            } else {
                target.fireFault()
                if let partner = target.toOne[inverse], partner != objectID {
                    context.object(with: partner).setToOne(index, to: nil, updateInverse: false)
                }
                target.setToOne(inverse, to: self, updateInverse: false)
            }
        }
    }

    private func checkSameContext(_ other: ManagedObject, _ key: String) {
        guard other.context === context else {
            fatalError("\(info.name).\(key): \(other.objectID) belongs to another context; relate objects of one context only")
        }
        if other.isDetached { other.trapDetached() }
    }
}
