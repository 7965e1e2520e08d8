/// Deletes the objects of an entity a predicate selects, in the store, with SQL, without
/// loading them into a context: Core Data's `NSBatchDeleteRequest`. Run it with
/// `ObjectContext.execute(_:)` or `PersistentStoreCoordinator.execute(_:)`.
///
/// Unlike Core Data's, it honours the model's delete rules, as a save would, in the same
/// transaction:
/// - **cascade**: related objects are deleted too (and their own rules apply);
/// - **nullify**: links to deleted objects are cleared (to-one columns set to NULL,
///   many-to-many rows removed); the objects that held them count as updated;
/// - **deny**: when an object to delete still has a related object through a deny
///   relationship (one the request does not delete as well), nothing is deleted and the
///   request throws `StoreError.validation` with one `.deleteDenied` problem per object.
///
/// The deletes are one transaction, recorded in the store's history as a save's are,
/// and posted to the coordinator's save observers as a `SaveNotice`.
public struct BatchDeleteRequest: Sendable, Hashable {
    public var entityName: String
    /// Which objects; nil: every object of the entity.
    public var predicate: QueryPredicate?
    /// Whether objects of the entity's subentities are deleted too (default: yes, as fetches).
    public var includesSubentities = true
    public var resultType: BatchResultType

    public init(entity entityName: String, predicate: QueryPredicate? = nil, resultType: BatchResultType = .count) {
        self.entityName = entityName
        self.predicate = predicate
        self.resultType = resultType
    }
}
