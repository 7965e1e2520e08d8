import Synchronization

/// What an entity's objects do at the moments of their life in a context, and how they
/// check themselves before a save: Core Data's `NSManagedObject` methods `awakeFromInsert`,
/// `awakeFromFetch`, `willSave`, `didSave`, `prepareForDeletion` and
/// `validateForInsert`/`Update`/`Delete`.
///
/// Typed objects are structs made afresh around a `ManagedObject` (`Photo(object)`), so
/// there is no subclass to override: a typed object implements the methods of
/// `TypedObject` it needs and is registered with `coordinator.register(Photo.self)`; code
/// without typed objects gives closures here and calls
/// `coordinator.setLifecycle(_:forEntity:)`. An entity without hooks of its own uses its
/// parent's (as a subclass inherits).
///
/// The moments, all on the context's queue:
/// - `awakeFromInsert`: once, when `insert` makes the object. What it sets is part of the insert.
/// - `awakeFromFetch`: when the object's values arrive from the store (a fault fired, or a
///   fetch filled it), again after it was turned back into a fault. What it sets is not a
///   change: not saved, not undone (set transient values here).
/// - `prepareForDeletion`: when `delete` marks the object, before the save applies the
///   delete rules (so its relationships are still there), cascaded deletes included.
/// - `willSave`: in `save()`, on each inserted, changed and deleted object, after the delete
///   rules and before validation and writing: it may change values (a modification date),
///   and those changes are saved and validated. Objects it changes get theirs too.
/// - `didSave`: after the save committed and its notice went out, on the same objects
///   (deleted ones too); what it changes is a new, unsaved change.
/// - `validateForInsert`/`Update`/`Delete`: in `save()`, after the model's own checks; an
///   error thrown fails the save with `StoreError.validation`, one problem of rule
///   `.custom` naming the object, and the property when the error is an `ObjectValidationError`.
public struct EntityLifecycle: Sendable {
    public typealias Hook = @Sendable (ManagedObject) -> Void
    public typealias Check = @Sendable (ManagedObject) throws -> Void

    public var awakeFromInsert: Hook?
    public var awakeFromFetch: Hook?
    public var willSave: Hook?
    public var didSave: Hook?
    public var prepareForDeletion: Hook?
    public var validateForInsert: Check?
    public var validateForUpdate: Check?
    public var validateForDelete: Check?

    public init(awakeFromInsert: Hook? = nil, awakeFromFetch: Hook? = nil, willSave: Hook? = nil, didSave: Hook? = nil,
                prepareForDeletion: Hook? = nil, validateForInsert: Check? = nil, validateForUpdate: Check? = nil,
                validateForDelete: Check? = nil) {
        self.awakeFromInsert = awakeFromInsert
        self.awakeFromFetch = awakeFromFetch
        self.willSave = willSave
        self.didSave = didSave
        self.prepareForDeletion = prepareForDeletion
        self.validateForInsert = validateForInsert
        self.validateForUpdate = validateForUpdate
        self.validateForDelete = validateForDelete
    }

    /// The hooks of a typed object's type: each calls its `TypedObject` method on a view of
    /// the object.
    public init<T: TypedObject & SendableMetatype>(_ type: T.Type) {
        self.init(awakeFromInsert: { T($0).awakeFromInsert() }, awakeFromFetch: { T($0).awakeFromFetch() },
                  willSave: { T($0).willSave() }, didSave: { T($0).didSave() },
                  prepareForDeletion: { T($0).prepareForDeletion() },
                  validateForInsert: { try T($0).validateForInsert() }, validateForUpdate: { try T($0).validateForUpdate() },
                  validateForDelete: { try T($0).validateForDelete() })
    }
}

/// An error a validation hook throws to name the property at fault: the save's problem
/// reads `Photo 7: title: must not be blank`.
public struct ObjectValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The attribute or relationship at fault, if one is.
    public var property: String?
    public var message: String

    public init(property: String? = nil, _ message: String) {
        self.property = property
        self.message = message
    }

    public var description: String { message }
}

/// The hooks registered on a coordinator, by entity; read by every context.
final class LifecycleRegistry: Sendable {
    private let hooks = Mutex<[String: EntityLifecycle]>([:])
    /// Whether any hooks are registered: inserts and faults ask on every object, and most
    /// models have none, so the common answer costs one atomic load, not a lock.
    private let any = Atomic(false)

    func set(_ lifecycle: EntityLifecycle?, for entity: String) {
        hooks.withLock { hooks in
            hooks[entity] = lifecycle
            any.store(!hooks.isEmpty, ordering: .releasing)
        }
    }

    /// Whether no entity has hooks: a save then skips looking for them object by object.
    var isEmpty: Bool { !any.load(ordering: .acquiring) }

    /// The hooks of `info`'s entity, or of its nearest ancestor that has some.
    func lifecycle(for info: EntityInfo, in model: Model) -> EntityLifecycle? {
        guard any.load(ordering: .acquiring) else { return nil }
        return hooks.withLock { hooks in
            var name: String? = info.name
            var seen: Set<String> = []
            while let current = name, seen.insert(current).inserted {
                if let found = hooks[current] { return found }
                name = model.entity(current)?.parent
            }
            return nil
        }
    }
}

extension PersistentStoreCoordinator {
    /// Gives `entity`'s objects (and its subentities' that have none of their own) these
    /// hooks, in every context of this coordinator; nil removes them. Set them before the
    /// contexts use the entity.
    public func setLifecycle(_ lifecycle: EntityLifecycle?, forEntity entity: String) {
        guard model.entity(entity) != nil else { fatalError("the model has no entity '\(entity)'") }
        lifecycles.set(lifecycle, for: entity)
    }

    /// Calls `type`'s `TypedObject` lifecycle and validation methods for its entity's objects
    /// (see `EntityLifecycle`).
    public func register<T: TypedObject & SendableMetatype>(_ type: T.Type) {
        setLifecycle(EntityLifecycle(type), forEntity: T.entityName)
    }
}
