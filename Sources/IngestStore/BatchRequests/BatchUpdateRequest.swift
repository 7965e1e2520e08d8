/// Sets attributes of the objects of an entity a predicate selects, in the store, with
/// one SQL statement, without loading them into a context: Core Data's
/// `NSBatchUpdateRequest`. Run it with `ObjectContext.execute(_:)` or
/// `PersistentStoreCoordinator.execute(_:)`.
///
/// Values are checked against the model before anything is written: an unknown attribute
/// throws `StoreError.unknownProperty`; a relationship, a value of another type, a date a
/// store cannot hold, or nil for a required attribute throws `StoreError.validation`.
/// The update is one transaction, recorded in the store's history as a save's is, and
/// posted to the coordinator's save observers as a `SaveNotice`.
public struct BatchUpdateRequest: Sendable, Hashable {
    public var entityName: String
    /// Which objects; nil: every object of the entity.
    public var predicate: QueryPredicate?
    /// Attribute names → the values to set (nil clears an optional attribute).
    public var propertiesToUpdate: [String: Value?]
    /// Whether objects of the entity's subentities are updated too (default: yes, as fetches).
    public var includesSubentities = true
    public var resultType: BatchResultType

    /// A request setting `propertiesToUpdate`, given as Swift values as predicates take them:
    /// `["title": "Pier", "views": 0, "note": nil]`, or `Value`s.
    /// - Throws: `PredicateArgumentError` (`.wrongType`) for a list or an object, which no
    ///   attribute holds.
    public init(entity entityName: String, predicate: QueryPredicate? = nil,
                propertiesToUpdate: [String: (any PredicateArgumentConvertible)?], resultType: BatchResultType = .count) throws {
        self.entityName = entityName
        self.predicate = predicate
        self.resultType = resultType
        var values: [String: Value?] = [:]
        for (name, given) in propertiesToUpdate {
            switch try given?.predicateArgument() ?? .value(nil) {
            case .value(let value): values[name] = .some(value)
            case let other: throw PredicateArgumentError(.wrongType, found: other.kind)
            }
        }
        self.propertiesToUpdate = values
    }

    /// A request setting `propertiesToUpdate` as `Value`s.
    public init(entity entityName: String, predicate: QueryPredicate? = nil, values propertiesToUpdate: [String: Value?],
                resultType: BatchResultType = .count) {
        self.entityName = entityName
        self.predicate = predicate
        self.propertiesToUpdate = propertiesToUpdate
        self.resultType = resultType
    }
}
