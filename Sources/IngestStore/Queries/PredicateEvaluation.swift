import Foundation

extension QueryPredicate {
    /// Whether `object` satisfies the predicate, evaluated in memory (against the
    /// object's current, possibly unsaved, values). Call inside the object's context's `perform`.
    /// - Throws: `QueryPredicateError` for a key path the object's entity does not have, or a
    ///   to-many key path compared without ANY, ALL or NONE.
    public func evaluate(with object: ManagedObject) throws -> Bool {
        switch self {
        case .constant(let flag): return flag
        case .not(let p): return try !p.evaluate(with: object)
        case .and(let ps):
            for p in ps where try !p.evaluate(with: object) { return false }
            return true
        case .or(let ps):
            for p in ps where try p.evaluate(with: object) { return true }
            return false
        case .comparison(let c): return try c.evaluate(with: object)
        }
    }
}

extension PredicateComparison {
    func evaluate(with object: ManagedObject) throws -> Bool {
        switch right {
        case .object, .objects:
            // As in SQL: the objects become the row numbers the relationship resolves to.
            let coordinator = object.context.coordinator
            let destination = Self.toOneDestination(left, from: object.info, schema: coordinator.schema)
            return try objectsAsKeys(destination: destination, schema: coordinator.schema, storeID: coordinator.storeID)
                .evaluate(with: object)
        default:
            break
        }
        let right = try Self.resolve(right, object, allowMany: false)
        let left = try Self.resolve(left, object, allowMany: true)
        // `9 < v` is `v > 9` when v is a decimal: its kind decides how they compare, as in SQL.
        if case .value = self.left, case .keyPath = self.right, quantifier == nil, let mirrored = op.mirrored,
           case .single(let decimal?) = right, decimal.decimalText != nil, case .single(let value) = left {
            return try ValueComparison.test(decimal, mirrored, value, options)
        }
        switch left {
        case .single(let value):
            // A quantifier over a to-one path treats it as a collection of one.
            return quantifier == .notAny ? try !test(value, right) : try test(value, right)
        case .list:
            throw QueryPredicateError("the left side of a comparison must be a key path or a value, not a list", column: 0)
        case .many(let values):
            guard let quantifier else {
                throw QueryPredicateError("a to-many key path is compared without ANY, ALL or NONE", column: 0)
            }
            switch quantifier {
            case .any: return try values.contains { try test($0, right) }
            case .all: return try values.allSatisfy { try test($0, right) }
            case .notAny: return try !values.contains { try test($0, right) }
            }
        }
    }

    private func test(_ value: Value?, _ right: Resolved) throws -> Bool {
        switch (op, right) {
        case (.in, .list(let items)):
            return items.contains { ValueComparison.equal(value, $0, options) }
        case (.between, .list(let bounds)) where bounds.count == 2:
            guard let low = ValueComparison.order(value, bounds[0], options),
                  let high = ValueComparison.order(value, bounds[1], options) else { return false }
            return low != .orderedAscending && high != .orderedDescending
        case (.in, _), (.between, _):
            throw QueryPredicateError("\(op.rawValue) needs a list on its right", column: 0)
        case (_, .list):
            throw QueryPredicateError("\(op.rawValue) cannot compare with a list", column: 0)
        case (_, .many):
            throw QueryPredicateError("the right side of a comparison cannot be a to-many key path", column: 0)
        case (_, .single(let other)):
            return try ValueComparison.test(value, op, other, options)
        }
    }

    enum Resolved {
        case single(Value?)
        case many([Value?])
        case list([Value?])
    }

    static func resolve(_ expression: PredicateExpression, _ object: ManagedObject, allowMany: Bool) throws -> Resolved {
        switch expression {
        case .value(let v): return .single(v)
        case .list(let items): return .list(items)
        case .variable(let name): throw QueryPredicateError("$\(name) has no value: call substituting(_:) first", column: 0)
        case .object, .objects:
            throw QueryPredicateError("an object compares only with a to-one relationship (as in whoTook == %@)", column: 0)
        case .keyPath(let path):
            let (values, many) = try walk(path, from: object)
            if many {
                guard allowMany else { throw QueryPredicateError("the right side of a comparison cannot be a to-many key path", column: 0) }
                return .many(values)
            }
            return .single(values.first ?? nil)
        case .aggregate(let function, let relationship, let attribute):
            let (members, many) = try objects(relationship, from: object)
            if try toManyCount(relationship, from: object.info, schema: object.context.coordinator.schema) > 1 {
                throw QueryPredicateError("@\(function.rawValue)'s key path \(relationship.joined(separator: ".")) crosses more than one to-many relationship", column: 0)
            }
            guard many else {
                throw QueryPredicateError("@\(function.rawValue) needs a to-many key path, and \(relationship.joined(separator: ".")) is not one", column: 0)
            }
            if function == .count { return .single(.int(Int64(members.count))) }
            var values: [Value] = []
            for member in members {
                let (found, _) = try walk(attribute, from: member)
                values += found.compactMap { $0 }
            }
            return .single(ValueComparison.aggregate(function, values))
        }
    }

    private static func toManyCount(_ path: [String], from start: EntityInfo, schema: Schema) throws -> Int {
        var entity = start
        var count = 0
        for key in path {
            guard let index = entity.relationshipIndex[key] else { break }
            let relationship = entity.relationships[index]
            if relationship.isToMany { count += 1 }
            entity = schema.entity(relationship.destination)!
        }
        return count
    }

    /// The values at the end of `path`, and whether the path went through a to-many.
    private static func walk(_ path: [String], from object: ManagedObject) throws -> ([Value?], Bool) {
        guard let last = path.last else { return ([], false) }
        let (owners, many) = try objects(Array(path.dropLast()), from: object)
        var values: [Value?] = []
        for owner in owners {
            if owner.info.attributeIndex[last] != nil {
                values.append(owner[last])
            } else if let index = owner.info.relationshipIndex[last] {
                guard !owner.info.relationships[index].isToMany else {
                    throw QueryPredicateError("'\(last)' is a to-many relationship: compare its members' attributes, or use @count", column: 0)
                }
                // The object's row number, as SQL reads the relationship's column (`predicateKey`).
                owner.context.checkAccess()
                owner.fireFault()
                values.append(owner.toOne[index].map { .int($0.predicateKey(in: owner.context.coordinator.storeID)) })
            } else {
                throw QueryPredicateError("entity \(owner.info.name) has no key '\(last)'", column: 0)
            }
        }
        return (values, many)
    }

    /// The objects reached by following `path` (relationships only) from `object`.
    private static func objects(_ path: [String], from object: ManagedObject) throws -> ([ManagedObject], Bool) {
        var current = [object]
        var many = false
        for key in path {
            var next: [ManagedObject] = []
            for owner in current {
                guard let index = owner.info.relationshipIndex[key] else {
                    throw QueryPredicateError("entity \(owner.info.name) has no relationship '\(key)'", column: 0)
                }
                if owner.info.relationships[index].isToMany {
                    many = true
                    next += owner.objects(forKey: key)
                } else if let target = owner.object(forKey: key) {
                    next.append(target)
                }
            }
            current = next
        }
        return (current, many)
    }
}
