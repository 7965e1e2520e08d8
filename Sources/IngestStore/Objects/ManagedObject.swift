import Foundation

/// Committed state of one row, as read from the store.
struct RowData: Sendable {
    var values: [Value?]
    /// Per relationship index: the to-one target, for relationships kept in a column.
    var toOne: [ObjectID?]
}

/// A to-many relationship's members: what the store held when loaded, plus the
/// changes made in the context since.
struct ToManyState {
    var committed: Set<ObjectID>?
    var added: Set<ObjectID> = []
    var removed: Set<ObjectID> = []
    /// For an ordered relationship, once loaded: the members in order, changes applied.
    var order: [ObjectID]?
    /// Whether `order` changed since it was loaded (the save writes the positions).
    var orderChanged = false

    /// Adds a member (callers know it is not one): at the end of an ordered relationship.
    mutating func insert(_ id: ObjectID) {
        if removed.remove(id) == nil { added.insert(id) }
        if order != nil {
            order!.append(id)
            orderChanged = true
        }
    }

    mutating func remove(_ id: ObjectID) {
        if added.remove(id) == nil { removed.insert(id) }
        if let position = order?.firstIndex(of: id) {
            order!.remove(at: position)
            orderChanged = true
        }
    }

    /// Moves a member of an ordered relationship to `index` (clamped to the end).
    mutating func move(_ id: ObjectID, to index: Int) {
        guard let position = order?.firstIndex(of: id) else { return }
        order!.remove(at: position)
        order!.insert(id, at: min(max(0, index), order!.count))
        orderChanged = true
    }
}

/// One object of the graph, living in one context.
///
/// Attributes by key (`photo["title"]`), typed (`photo.value(forKey: "views", as: Int64.self)`)
/// or as members (`photo.title`). Relationships through `object(forKey:)`,
/// `setObject(_:forKey:)`, `objects(forKey:)`, `addObject(_:toKey:)` and
/// `removeObject(_:fromKey:)`; their inverses follow. An object fetched or made from
/// an ID is a fault: it loads its row when first read.
///
/// Not Sendable: use it only inside its context's `perform`; send its `objectID` instead.
@dynamicMemberLookup
public final class ManagedObject {
    // The mutable state below is touched only on the context's queue, which every entry
    // point checks (`checkAccess`); the runtime's per-access exclusivity checks would add
    // nothing but cost on the hottest path (about a sixth of an insert's instructions).
    @exclusivity(unchecked) public internal(set) var objectID: ObjectID
    let info: EntityInfo
    /// Unowned, not weak: read on every access, and an object must not outlive its context.
    private unowned let owner: ObjectContext
    private let confinement: QueueConfinement

    /// Whether the row has not been loaded yet.
    @exclusivity(unchecked) public internal(set) var isFault: Bool
    /// The permanent ID a save in progress gives this object, until the save commits.
    @exclusivity(unchecked) var savedID: ObjectID?
    let values: ValueSlots
    /// The transient attributes' values (`EntityInfo.transientAttributes`): never stored.
    @exclusivity(unchecked) var transients: [Value?]
    /// Set while `awakeFromFetch` runs: what it sets is the object's state as fetched, not
    /// a change to save or undo (as Core Data turns change tracking off around it).
    @exclusivity(unchecked) var isAwakening = false
    @exclusivity(unchecked) var toOne: [ObjectID?]
    @exclusivity(unchecked) var toMany: [ToManyState]
    /// The fault's values and to-one keys were already filled in by a fetch: firing it
    /// reads nothing.
    @exclusivity(unchecked) var preloaded = false
    /// The row as loaded, kept once the object changes, for rollback and merges.
    @exclusivity(unchecked) var committed: RowData?
    @exclusivity(unchecked) var changedAttributes = ChangeMask()
    @exclusivity(unchecked) var changedToOne = ChangeMask()
    @exclusivity(unchecked) public internal(set) var isInserted = false
    @exclusivity(unchecked) public internal(set) var isDeleted = false
    /// Dropped by its context's `reset()`: the context no longer tracks it, so a change to
    /// it could never be saved. Changing it traps (as Core Data's invalidated objects do)
    /// instead of being dropped at the next save.
    @exclusivity(unchecked) var isDetached = false

    init(id: ObjectID, info: EntityInfo, context: ObjectContext, fault: Bool) {
        objectID = id
        self.info = info
        owner = context
        confinement = context.confinement
        isFault = fault
        values = ValueSlots(count: info.attributes.count, defaults: info.hasDefaults ? info.attributeDefaults : nil)
        transients = info.transientDefaults
        if info.relationships.isEmpty {
            toOne = []
            toMany = []
        } else {
            toOne = Array(repeating: nil, count: info.relationships.count)
            toMany = Array(repeating: ToManyState(), count: info.relationships.count)
        }
    }

    deinit { values.free() }

    /// The context this object lives in.
    public var context: ObjectContext { owner }

    /// The object's own entity (its ID names its hierarchy's root; see `ObjectID`).
    public var entityName: String { info.name }

    /// Whether the object is of entity `name` or of one of its subentities.
    public func isKind(ofEntity name: String) -> Bool {
        info.name == name || context.coordinator.schema.entity(name)?.includes(info) == true
    }

    /// Whether the object has changes not yet saved.
    public var hasChanges: Bool { isInserted || isDeleted || !changedAttributes.isEmpty || !changedToOne.isEmpty }

    /// Whether an ordered to-many of the object has a new order not yet saved (a move
    /// changes no link, so `hasChanges` does not see it; merges must keep it).
    var hasUnsavedOrder: Bool { toMany.contains { $0.orderChanged } }

    // MARK: - Attributes

    /// The attribute's value; setting it marks the object changed. A transient attribute's
    /// value is kept here only: setting it is recorded for undo, but is no change a save writes.
    public subscript(key: String) -> Value? {
        get {
            guard let index = info.attributePosition(key) else {
                let transient = transientIndex(key)
                confinement.check()
                fireFault()
                return transients[transient]
            }
            confinement.check()
            fireFault()
            return values[index]
        }
        set {
            guard let index = info.attributePosition(key) else { return setTransient(newValue, transientIndex(key)) }
            setValue(newValue, forAttributeAt: index)
        }
    }

    /// Sets the attribute at `index` in the entity's `storedAttributes` (its `attributes`
    /// when it has no transient ones): for importers that resolve names once, not per record. A decimal is kept in its canonical form (`DecimalText`).
    public func setValue(_ newValue: Value?, forAttributeAt index: Int) {
        guard index >= 0 && index < values.count else { fatalError("entity \(info.name) has no attribute at position \(index)") }
        // A decimal is kept in its one form (`DecimalText`), so `7.80` over a stored `7.8` is no change.
        let newValue = newValue?.canonicalized
        confinement.check()
        if isDetached { trapDetached() }
        fireFault()
        if isAwakening {
            values[index] = newValue
            return
        }
        if let recorder = context.undoRecorder {
            let before = (values[index], context.tracking(of: self))
            defer {
                if before.0 != values[index] {
                    recorder.record(.value(self, index, before: before.0, after: values[index], before.1, context.tracking(of: self)))
                }
            }
            return setValueTracked(newValue, index)
        }
        setValueTracked(newValue, index)
    }

    private func setValueTracked(_ newValue: Value?, _ index: Int) {
        if isInserted {
            // A new object's row is written whole: no need to track which keys changed.
            values[index] = newValue
            if confinement.tracksObjectChanges { context.noteInsertedChanged(self) }
            return
        }
        guard values[index] != newValue else { return }
        noteChange()
        values[index] = newValue
        changedAttributes.insert(index)
    }

    public subscript(dynamicMember key: String) -> Value? {
        get { self[key] }
        set { self[key] = newValue }
    }

    /// The attribute's value as a Swift type; nil when it has none or is of another type.
    public func value<T: ValueConvertible>(forKey key: String, as type: T.Type) -> T? {
        self[key].flatMap(T.init(value:))
    }

    /// Sets the transient attribute at `index` in `EntityInfo.transientAttributes`.
    private func setTransient(_ newValue: Value?, _ index: Int) {
        let newValue = newValue?.canonicalized
        confinement.check()
        if isDetached { trapDetached() }
        fireFault()
        let before = transients[index]
        guard before != newValue else { return }
        transients[index] = newValue
        if !isAwakening { context.undoRecorder?.record(.transient(self, index, before: before, after: newValue)) }
    }

    private func transientIndex(_ key: String) -> Int {
        guard let index = info.transientIndex[key] else { return attributeIndex(key) }
        return index
    }

    private func attributeIndex(_ key: String) -> Int {
        guard let index = info.attributePosition(key) else {
            fatalError("entity \(info.name) has no attribute '\(key)'"
                + (info.relationshipIndex[key] != nil ? " ('\(key)' is a relationship: use object(forKey:) or objects(forKey:))" : ""))
        }
        return index
    }

    func relationshipIndex(_ key: String, toMany: Bool) -> Int {
        guard let index = info.relationshipIndex[key] else {
            fatalError("entity \(info.name) has no relationship '\(key)'")
        }
        guard info.relationships[index].isToMany == toMany else {
            fatalError("\(info.name).\(key) is a to-\(toMany ? "one" : "many") relationship")
        }
        return index
    }

    // MARK: - Faulting

    func fireFault() {
        guard isFault else { return }
        if preloaded {
            preloaded = false
            isFault = false
            context.awakeFromFetch(self)
            return
        }
        guard let row = context.loadRow(objectID, info) else {
            fatalError("\(objectID) was deleted from the store: its fault cannot be fulfilled")
        }
        apply(row)
    }

    /// Takes a row's values, keeping local changes to the keys changed in this context.
    func apply(_ row: RowData) {
        for index in 0..<values.count where !changedAttributes.contains(index) { values[index] = row.values[index] }
        for index in toOne.indices where !changedToOne.contains(index) { toOne[index] = row.toOne[index] }
        if hasChanges { committed = row }
        guard isFault else { return }
        isFault = false
        context.awakeFromFetch(self)
    }

    /// Turns the object back into a fault, dropping its values (and changes).
    func turnIntoFault() {
        isFault = true
        preloaded = false
        committed = nil
        changedAttributes = []
        changedToOne = []
        values.clear()
        // A transient value is not in the store to load again: it goes back to its default.
        if !transients.isEmpty { transients = info.transientDefaults }
        for index in toOne.indices { toOne[index] = nil }
        for index in toMany.indices { toMany[index] = ToManyState() }
    }

    /// Records the object as changed, keeping its loaded state for rollback.
    func noteChange() {
        if isDetached { trapDetached() }
        guard !isInserted else {
            if confinement.tracksObjectChanges { context.noteInsertedChanged(self) }
            return
        }
        if committed == nil { committed = RowData(values: values.array, toOne: toOne) }
        context.noteUpdated(self)
    }
}

extension ManagedObject {
    /// A change to an object its context's `reset()` dropped.
    func trapDetached(_ function: StaticString = #function) -> Never {
        fatalError("\(objectID) was changed (\(function)) after ObjectContext '\(context.name)' dropped it in reset(): "
            + "the change could never be saved; fetch the object again (context.object(with: id)) and change that one")
    }
}

extension ManagedObject: Hashable {
    public static func == (lhs: ManagedObject, rhs: ManagedObject) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension ManagedObject: CustomStringConvertible {
    public var description: String { "<\(info.name) \(objectID.uri)\(isFault ? " fault" : "")>" }
}

@available(*, unavailable, message: "managed objects belong to one context's queue; send objectID instead")
extension ManagedObject: Sendable {}
