/// A context's undo manager (Core Data's `NSManagedObjectContext.undoManager`): it records
/// every change made through the context's objects — attribute values, relationships on
/// both sides, inserts and deletes — in groups, and `ObjectContext.undo()`/`redo()` take
/// a group back or forward.
///
/// A group is what one `perform` changes (the end of each `perform`, as Core Data's end of
/// an event), or what lies between `beginUndoGrouping()` and `endUndoGrouping()`.
///
/// The history lasts across saves and merges, as Core Data's does: after a save, `undo()`
/// takes back the last change as a new, unsaved change (the object is changed again, and
/// the next save writes the old value); undoing an insert that was saved deletes the object.
/// What a save or a merge makes void is dropped, the rest stays:
/// - a save drops the entries of the objects it deleted (a deleted row does not come back);
/// - a merge drops the entries of the objects it deleted or refreshed (their values are the
///   store's now), and those naming a deleted object; other objects' entries stay.
/// Once saved, a to-many change is taken back as the members it added and removed: a
/// saved move within an ordered relationship is not undone (an unsaved one is).
/// A group some of whose entries were dropped takes back the rest. `refresh(_:mergeChanges:)`
/// drops the refreshed object's entries; `reset()`, `rollback()`, `obtainPermanentIDs` and
/// a failed save whose delete rules changed objects end the whole history.
///
/// Confined to its context's queue, as the objects are.
public final class ContextUndoManager {
    /// One change, with what it replaced and what it made, and the object's change
    /// tracking before and after.
    ///
    /// A step recorded before a save has no tracking (nil): the save made it void, and
    /// replaying the step tracks the change against the saved state instead.
    enum Step {
        case value(ManagedObject, Int, before: Value?, after: Value?, Tracking?, Tracking?)
        case toOne(ManagedObject, Int, before: ObjectID?, after: ObjectID?, Tracking?, Tracking?)
        /// A transient attribute's value (its position among the transient ones): no change a save sees.
        case transient(ManagedObject, Int, before: Value?, after: Value?)
        case toMany(ManagedObject, Int, before: ToManyState, after: ToManyState)
        case join(JoinChange, before: Bool?, after: Bool?)
        case insert(ManagedObject)
        /// A delete of an object inserted and not saved: it leaves the context.
        case discard(ManagedObject)
        case delete(ManagedObject, Tracking?)
        /// An object the save will write (a relationship of it changed).
        case updated(ManagedObject)
        /// An insert that was saved: undone, the object is deleted.
        case savedInsert(ManagedObject)
        /// A to-many change that was saved, as the members it added and removed.
        case members(ManagedObject, Int, added: Set<ObjectID>, removed: Set<ObjectID>)
        /// A many-to-many link made (`linked`) or removed, and saved.
        case link(JoinChange, linked: Bool)
    }

    /// What `save` will write of an object, beside its values.
    struct Tracking {
        var changedAttributes: ChangeMask
        var changedToOne: ChangeMask
        var committed: RowData?
        var updated: Bool
    }

    /// Groups to undo (the last first) and to redo.
    var undoStack: [[Step]] = []
    var redoStack: [[Step]] = []
    /// The group being recorded.
    var open: [Step] = []
    private var explicitDepth = 0
    /// Set while undoing or redoing: those changes are not recorded as new ones.
    var isReplaying = false
    /// The most groups kept (0: no limit); the oldest go first.
    public var levelsOfUndo = 0

    public init() {}

    public var canUndo: Bool { !undoStack.isEmpty || !open.isEmpty }
    public var canRedo: Bool { !redoStack.isEmpty }

    /// Starts a group that lasts until the matching `endUndoGrouping()`, across `perform`s.
    public func beginUndoGrouping() {
        if explicitDepth == 0 { closeGroup() }
        explicitDepth += 1
    }

    /// Ends the group `beginUndoGrouping()` started.
    public func endUndoGrouping() {
        guard explicitDepth > 0 else { fatalError("endUndoGrouping() without beginUndoGrouping()") }
        explicitDepth -= 1
        if explicitDepth == 0 { closeGroup() }
    }

    /// Forgets every group (a group begun stays open, empty, for its end).
    public func removeAllActions() {
        undoStack.removeAll()
        redoStack.removeAll()
        open.removeAll()
    }

    func record(_ step: Step) {
        guard !isReplaying else { return }
        open.append(step)
        redoStack.removeAll()
    }

    /// Ends the automatic group (each `perform`'s end); an explicit group stays open.
    func closeGroup() {
        guard explicitDepth == 0, !open.isEmpty else { return }
        undoStack.append(open)
        open.removeAll()
        if levelsOfUndo > 0, undoStack.count > levelsOfUndo { undoStack.removeFirst(undoStack.count - levelsOfUndo) }
    }

    /// The last group, the one being recorded first (an explicit group still open ends
    /// here, and what follows until its end is a group of its own).
    func takeUndo() -> [Step]? {
        if !open.isEmpty {
            undoStack.append(open)
            open.removeAll()
        }
        return undoStack.popLast()
    }

    func pushRedo(_ group: [Step]) { redoStack.append(group) }

    func takeRedo() -> [Step]? { redoStack.popLast() }

    func pushUndo(_ group: [Step]) { undoStack.append(group) }
}
