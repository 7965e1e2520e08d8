/// What a batch request returns besides doing its work (Core Data's `NSBatchDeleteRequest.resultType`).
public enum BatchResultType: Sendable, Hashable {
    /// Only how many objects the request deleted or updated.
    case count
    /// The count and the IDs of those objects.
    case objectIDs
}

/// What a `BatchDeleteRequest` or `BatchUpdateRequest` did (Core Data's
/// `NSBatchDeleteResult` / `NSBatchUpdateResult`).
public struct BatchRequestResult: Sendable, Equatable {
    /// Objects of the request's entity the request deleted or updated (objects deleted by
    /// a cascade are not counted here; `changes` has them).
    public var count: Int
    /// Those objects' IDs, in row order, under `.objectIDs`; nil under `.count`.
    public var objectIDs: [ObjectID]?
    /// Everything the request changed, as a save's notice: deleted objects (cascades
    /// included), updated ones (and those whose relationship to a deleted object was
    /// nullified). Merge it into contexts with `ObjectContext.mergeChanges(fromRemoteContextSave:into:)`;
    /// contexts that merge automatically already got it.
    public var changes: SaveNotice
}
