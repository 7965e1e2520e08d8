/// How a save resolves conflicts, as Core Data's five merge policies do.
///
/// Two kinds of conflict reach it:
/// - **the store changed** (optimistic locking): an object this save updates or deletes
///   whose row changed in the store since the context read it (another context, another
///   process). The save compares the row, read again inside its transaction (and locked
///   there on PostgreSQL), with what the context read, property by property;
/// - **uniqueness**: an inserted object whose unique key a stored row (or another
///   inserted object) already holds;
/// - **the parent changed** (a child context's save): an object the child changed that its
///   parent changed or deleted since the child read it; "the store" below is the parent then.
public enum MergePolicy: Sendable, CaseIterable {
    /// The save throws `StoreError.mergeConflict` (the store changed) or
    /// `.uniquenessConflict`, naming the objects and properties; nothing is written.
    /// Core Data's `NSErrorMergePolicy`; the default.
    case error
    /// Property by property, the context's changes win: the properties it changed are
    /// written, the ones only the store changed are taken from the store. An inserted
    /// object is written onto the existing row and takes its ObjectID.
    /// Core Data's `NSMergeByPropertyObjectTrumpMergePolicy`.
    case objectTrump
    /// Property by property, the store's changes win: a property both changed keeps the
    /// stored value; the context's other changes are written. An inserted object takes
    /// the existing row's ObjectID and values; its relationship changes still apply.
    /// Core Data's `NSMergeByPropertyStoreTrumpMergePolicy`.
    case storeTrump
    /// The object as the context holds it is written whole, over what the store holds,
    /// properties the context never changed included.
    /// Core Data's `NSOverwriteMergePolicy`.
    case overwrite
    /// The object's changes are dropped: it becomes the row as stored.
    /// Core Data's `NSRollbackMergePolicy`.
    case rollback

    /// Core Data's name for `.objectTrump`.
    public static var mergeByPropertyObjectTrump: MergePolicy { .objectTrump }
    /// Core Data's name for `.storeTrump`.
    public static var mergeByPropertyStoreTrump: MergePolicy { .storeTrump }

    /// Whether the context's values are written over a uniqueness conflict's row.
    var writesObject: Bool { self == .objectTrump || self == .overwrite }
}
