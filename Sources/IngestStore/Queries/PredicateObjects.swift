import Foundation

// Objects in predicates (`whoTook == %@`, `whoTook IN %@`). A to-one relationship is a
// column of row numbers in SQL; in memory it resolves to the same numbers, so that an
// object on the right can become one number that SQL binds and memory compares, with
// one answer for both.

extension ObjectID {
    /// The number a to-one relationship holding this object compares as, in SQL and in
    /// memory alike: a saved object's row number; for an unsaved one, a negative number
    /// (no stored row points at an unsaved object, and no row number is negative); for an
    /// object of another store, 0, which no row number is.
    func predicateKey(in storeID: UUID) -> Int64 {
        guard self.storeID == storeID else { return 0 }
        switch key {
        case .permanent(let pk): return pk
        case .temporary(let n): return -Int64(clamping: n)
        }
    }
}

extension PredicateComparison {
    /// The comparison with the objects on its right made the numbers `predicateKey` gives,
    /// for a left side that is a to-one relationship to `destination` (nil when it is not one).
    /// - Throws: `QueryPredicateError` for objects compared with anything but a to-one
    ///   relationship, by an operator other than ==, != and IN, or of another entity than
    ///   the relationship's.
    func objectsAsKeys(destination: EntityInfo?, schema: Schema, storeID: UUID) throws -> PredicateComparison {
        let ids: [ObjectID]
        switch right {
        case .object(let id): ids = [id]
        case .objects(let list): ids = list.compactMap { $0 }
        default: return self
        }
        guard let destination else {
            throw QueryPredicateError("an object compares only with a to-one relationship (as in whoTook == %@)", column: 0)
        }
        guard op == .equal || op == .notEqual || op == .in else {
            throw QueryPredicateError("a to-one relationship compares with objects by ==, != or IN, not \(op.rawValue)", column: 0)
        }
        for id in ids {
            guard let entity = schema.entity(id.entityName), entity.rootName == destination.rootName else {
                throw QueryPredicateError("the relationship leads to \(destination.name); it cannot be compared with an object of \(id.entityName)", column: 0)
            }
        }
        var compared = self
        switch right {
        case .object(let id): compared.right = .value(.int(id.predicateKey(in: storeID)))
        case .objects(let list): compared.right = .list(list.map { $0.map { .int($0.predicateKey(in: storeID)) } })
        default: break
        }
        return compared
    }

    /// The entity a key path of relationships ending in a to-one leads to from `start`,
    /// nil when it ends in anything else.
    static func toOneDestination(_ expression: PredicateExpression, from start: EntityInfo, schema: Schema) -> EntityInfo? {
        guard case .keyPath(let path) = expression, !path.isEmpty else { return nil }
        var entity = start
        for (depth, key) in path.enumerated() {
            guard let index = entity.relationshipIndex[key], let next = schema.entity(entity.relationships[index].destination) else {
                return nil
            }
            if depth == path.count - 1 && entity.relationships[index].isToMany { return nil }
            entity = next
        }
        return entity
    }
}
