/// Keeping the undo history across saves and merges (see `ContextUndoManager`): a save
/// turns every step into one against the saved state, a merge drops the steps it made void.
extension ContextUndoManager {
    /// After a save: steps name permanent IDs (`mapping`), lose their tracking (it described
    /// unsaved state), and become what replays against the saved state. Steps of objects
    /// `isVoid` says the save made void (deleted, merged onto other rows) are dropped.
    func settle(mapping: [ObjectID: ObjectID], isVoid: (ManagedObject) -> Bool) {
        func id(_ id: ObjectID?) -> ObjectID? { id.map { mapping[$0] ?? $0 } }
        func ids(_ set: Set<ObjectID>) -> Set<ObjectID> { mapping.isEmpty ? set : Set(set.map { mapping[$0] ?? $0 }) }
        func settled(_ step: Step) -> Step? {
            if let object = step.object, isVoid(object) { return nil }
            switch step {
            case .value(let object, let index, let before, let after, _, _):
                return .value(object, index, before: before, after: after, nil, nil)
            case .toOne(let object, let index, let before, let after, _, _):
                return .toOne(object, index, before: id(before), after: id(after), nil, nil)
            case .toMany(let object, let index, let before, let after):
                guard case .members(_, _, let added, let removed)? = Self.delta(object, index, before, after) else { return nil }
                return .members(object, index, added: ids(added), removed: ids(removed))
            case .join(let change, let before, let after):
                // Made a link (or cancelled a pending removal), or removed one.
                return .link(change.mapped(mapping), linked: after ?? (before == false))
            case .insert(let object):
                return .savedInsert(object)
            case .delete(let object, _):
                return .delete(object, nil)
            case .updated:
                // Replays track changes against the saved state: nothing to mark.
                return nil
            case .discard, .savedInsert, .transient:
                // A transient value is no change a save sees: its step replays as it was.
                return step
            case .members(let object, let index, let added, let removed):
                return .members(object, index, added: ids(added), removed: ids(removed))
            case .link(let change, let linked):
                return .link(change.mapped(mapping), linked: linked)
            }
        }
        transform(settled)
    }

    /// After a merge: drops the steps of `objects` (refreshed or deleted by it) and those
    /// naming an object in `deleted`.
    func drop(objects: Set<ObjectIdentifier>, deleted: Set<ObjectID>) {
        guard !objects.isEmpty || !deleted.isEmpty else { return }
        transform { step in
            if let object = step.object, objects.contains(ObjectIdentifier(object)) { return nil }
            guard deleted.isEmpty || step.names.isDisjoint(with: deleted) else { return nil }
            // A merge makes loaded members read again: a step restoring them as loaded would
            // bring back what was read before it. An ordered one keeps its states (moves).
            if case .toMany(let object, let index, let before, let after) = step, before.order == nil && after.order == nil {
                return Self.delta(object, index, before, after)
            }
            return step
        }
    }

    /// What a to-many step changed, whatever was loaded: the members it added and removed
    /// (nil when it changed none).
    private static func delta(_ object: ManagedObject, _ index: Int, _ before: ToManyState, _ after: ToManyState) -> Step? {
        let added = after.added.subtracting(before.added).union(before.removed.subtracting(after.removed))
        let removed = after.removed.subtracting(before.removed).union(before.added.subtracting(after.added))
        guard !added.isEmpty || !removed.isEmpty else { return nil }
        return .members(object, index, added: added, removed: removed)
    }

    private func transform(_ body: (Step) -> Step?) {
        undoStack = undoStack.map { $0.compactMap(body) }.filter { !$0.isEmpty }
        redoStack = redoStack.map { $0.compactMap(body) }.filter { !$0.isEmpty }
        open = open.compactMap(body)
    }
}

extension ContextUndoManager.Step {
    /// The object the step changes, if it is about one object.
    var object: ManagedObject? {
        switch self {
        case .value(let object, _, _, _, _, _), .toOne(let object, _, _, _, _, _), .toMany(let object, _, _, _),
             .insert(let object), .discard(let object), .delete(let object, _), .updated(let object),
             .savedInsert(let object), .members(let object, _, _, _), .transient(let object, _, _, _):
            object
        case .join, .link:
            nil
        }
    }

    /// Every object ID the step names besides its object's.
    var names: Set<ObjectID> {
        switch self {
        case .toOne(_, _, let before, let after, _, _): Set([before, after].compactMap { $0 })
        case .toMany(_, _, let before, let after): before.added.union(before.removed).union(after.added).union(after.removed)
        case .members(_, _, let added, let removed): added.union(removed)
        case .join(let change, _, _), .link(let change, _): [change.a, change.b]
        case .value, .insert, .discard, .delete, .updated, .savedInsert, .transient: []
        }
    }
}
