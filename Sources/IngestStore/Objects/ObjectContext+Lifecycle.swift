/// Where a context calls its entities' lifecycle hooks and validation (`EntityLifecycle`).
extension ObjectContext {
    func lifecycle(_ info: EntityInfo) -> EntityLifecycle? {
        coordinator.lifecycles.lifecycle(for: info, in: coordinator.model)
    }

    /// After the object's values arrived from the store; what the hook sets is not tracked.
    func awakeFromFetch(_ object: ManagedObject) {
        guard let hook = lifecycle(object.info)?.awakeFromFetch, !object.isAwakening else { return }
        object.isAwakening = true
        defer { object.isAwakening = false }
        hook(object)
    }

    /// The objects a save writes, as hooks see them: inserted, changed, deleted.
    func objectsToSave() -> [ManagedObject] {
        insertedList + updatedSet.compactMap { registered[$0] }.filter { !$0.isDeleted } + Array(deletedSet.values)
    }

    /// `willSave` on every object the save writes, and on those that its calls change in turn.
    /// Returns the objects that had hooks, for `didSave`.
    func runWillSave() -> [ManagedObject] {
        guard !coordinator.lifecycles.isEmpty else { return [] }
        var called = Set<ObjectIdentifier>()
        var withHooks: [ManagedObject] = []
        while true {
            let fresh = objectsToSave().filter { !called.contains(ObjectIdentifier($0)) }
            guard !fresh.isEmpty else { return withHooks }
            for object in fresh {
                called.insert(ObjectIdentifier(object))
                guard let hooks = lifecycle(object.info) else { continue }
                withHooks.append(object)
                hooks.willSave?(object)
            }
        }
    }

    /// What the entities' `validateForInsert`/`Update`/`Delete` throw, as problems.
    func lifecycleProblems() -> [ValidationProblem] {
        guard !coordinator.lifecycles.isEmpty else { return [] }
        var problems: [ValidationProblem] = []
        func check(_ object: ManagedObject, _ validation: EntityLifecycle.Check?) {
            guard let validation else { return }
            do {
                try validation(object)
            } catch {
                let named = error as? ObjectValidationError
                problems.append(ValidationProblem(object: object.isDeleted ? "\(object.objectID)" : label(object), objectID: object.objectID,
                                                  entity: object.info.name, key: uniquenessKey(object), property: named?.property,
                                                  rule: .custom, message: named?.message ?? "\(error)"))
            }
        }
        for object in insertedList { check(object, lifecycle(object.info)?.validateForInsert) }
        for object in updatedSet.compactMap({ registered[$0] }) where !object.isDeleted {
            check(object, lifecycle(object.info)?.validateForUpdate)
        }
        for object in deletedSet.values { check(object, lifecycle(object.info)?.validateForDelete) }
        return problems
    }
}
