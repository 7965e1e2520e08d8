/// A context's undo manager (Core Data's `NSManagedObjectContext.undoManager`): it records
/// every change made through the context's objects — attribute values, relationships on
/// both sides, inserts and deletes — in groups, and `ObjectContext.undo()`/`redo()` take
/// a group back or forward, before a save.
///
/// A group is what one `perform` changes (the end of each `perform`, as Core Data's end of
/// an event), or what lies between `beginUndoGrouping()` and `endUndoGrouping()`.
/// A save, `reset()`, `rollback()` and a merge of other saves end the history: `canUndo`
/// is false after them, and `undo()` does nothing. The save is committed; to go back,
/// change the objects again and save.
///
/// Confined to its context's queue, as the objects are.
public final class ContextUndoManager {
    /// One change, with what it replaced and what it made, and the object's change
    /// tracking before and after.
    enum Step {
        case value(ManagedObject, Int, before: Value?, after: Value?, Tracking, Tracking)
        case toOne(ManagedObject, Int, before: ObjectID?, after: ObjectID?, Tracking, Tracking)
        /// A transient attribute's value (its position among the transient ones): no change a save sees.
        case transient(ManagedObject, Int, before: Value?, after: Value?)
        case toMany(ManagedObject, Int, before: ToManyState, after: ToManyState)
        case join(JoinChange, before: Bool?, after: Bool?)
        case insert(ManagedObject)
        /// A delete of an object inserted and not saved: it leaves the context.
        case discard(ManagedObject)
        case delete(ManagedObject, Tracking)
        /// An object the save will write (a relationship of it changed).
        case updated(ManagedObject)
    }

    /// What `save` will write of an object, beside its values.
    struct Tracking {
        var changedAttributes: ChangeMask
        var changedToOne: ChangeMask
        var committed: RowData?
        var updated: Bool
    }

    /// Groups to undo (the last first) and to redo.
    private(set) var undoStack: [[Step]] = []
    private(set) var redoStack: [[Step]] = []
    /// The group being recorded.
    private var open: [Step] = []
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
        precondition(explicitDepth > 0, "endUndoGrouping() without beginUndoGrouping()")
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
