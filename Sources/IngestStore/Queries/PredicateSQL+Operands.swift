import Foundation

// The operands of compiled predicates: key paths resolved to columns through joins,
// subqueries over to-many relationships, aggregates, and values.
extension PredicateCompiler {
    enum Operand {
        case column(String, AttributeType?)
        /// A to-one relationship's column of row numbers, and the entity it leads to.
        case relationship(String, EntityInfo)
        case value(Value?, String)
        case expression(String)

        var sql: String {
            switch self {
            case .column(let sql, _), .relationship(let sql, _), .value(_, let sql), .expression(let sql): sql
            }
        }
        var destination: EntityInfo? { if case .relationship(_, let entity) = self { entity } else { nil } }
        var isNil: Bool { if case .value(nil, _) = self { true } else { false } }
        var isText: Bool {
            switch self {
            case .column(_, let type): type == .string || type == .uuid
            case .value(let v, _): v?.stringValue != nil
            case .relationship, .expression: false
            }
        }
        var type: AttributeType? { if case .column(_, let t) = self { t } else { nil } }
    }

    @_optimize(none)
    mutating func operand(_ expression: PredicateExpression, _ scope: inout Scope) throws -> Operand {
        switch expression {
        case .value(let value): return .value(value, value == nil ? "NULL" : bind(value))
        case .list: throw QueryPredicateError("a list can only stand on the right of IN or BETWEEN", column: 0)
        case .object, .objects:
            throw QueryPredicateError("an object compares only with a to-one relationship (as in whoTook == %@)", column: 0)
        case .variable(let name): throw QueryPredicateError("$\(name) has no value: call substituting(_:) first", column: 0)
        case .keyPath(let path):
            if try splitAtToMany(path, scope.entity) != nil {
                throw QueryPredicateError("the right side of a comparison cannot be a to-many key path", column: 0)
            }
            return try column(path, &scope)
        case .aggregate(let function, let relationship, let attribute):
            guard let split = try splitAtToMany(relationship, scope.entity) else {
                throw QueryPredicateError("@\(function.rawValue) needs a to-many key path, and \(relationship.joined(separator: ".")) is not one", column: 0)
            }
            guard split.rest.isEmpty else {
                throw QueryPredicateError("@\(function.rawValue)'s key path \(relationship.joined(separator: ".")) crosses more than one to-many relationship", column: 0)
            }
            let (from, link, child) = try subquery(from: &scope, through: split.prefix)
            var childScope = child
            if function == .count {
                return .expression("(SELECT count(*) FROM \(from) WHERE \(link))")
            }
            let value = try column(attribute, &childScope)
            let joins = childScope.localJoins.joined(separator: " ")
            let sql = "(SELECT \(aggregate(function, value.sql, type: value.type)) FROM \(from) \(joins) WHERE \(link))"
            // The least or greatest decimal is a decimal, compared by number as its column is.
            if value.type == .decimal && (function == .min || function == .max) { return .column(sql, .decimal) }
            return .expression(sql)
        }
    }

    /// A column at the end of a path of to-one relationships, joining tables as needed.
    mutating func column(_ path: [String], _ scope: inout Scope) throws -> Operand {
        if path.count == 1, scope.isOuter, let alias = expressionAliases[path[0]] {
            return .expression(alias)
        }
        var entity = scope.entity
        var alias = scope.alias
        for (depth, key) in path.enumerated() {
            let isLast = depth == path.count - 1
            if isLast, let index = entity.attributeIndex[key] {
                return .column("\(alias).\(quoted(key))", entity.attributes[index].type)
            }
            guard let index = entity.relationshipIndex[key] else {
                throw Self.unknownKey(key, entity)
            }
            let relationship = entity.relationships[index]
            guard case .column(let fk) = relationship.storage else {
                throw QueryPredicateError("'\(key)' is a to-many relationship: compare its members' attributes, or use @count", column: 0)
            }
            let destination = schema.entity(relationship.destination)!
            if isLast { return .relationship("\(alias).\(quoted(fk))", destination) }
            alias = join(destination, from: alias, through: fk, key: key, &scope, rejectsNull: useRejectsNull)
            entity = destination
        }
        throw QueryPredicateError("an empty key path", column: 0)
    }

    /// An aggregate of `argument` (a column of `type`, or `*`), giving what SQLite gives:
    /// sums of integers are integers (an overflow is an error on both), averages doubles
    /// (of dates: seconds since 2001), the minimum and maximum of booleans booleans.
    @_optimize(none)
    func aggregate(_ function: AggregateFunction, _ argument: String, type: AttributeType?) -> String {
        guard dialect == .postgres else {
            if type == .decimal && (function == .min || function == .max) { return "\(function.rawValue)(\(byNumber(argument)))" }
            return switch function {
            case .count: "count(\(argument))"
            case .sum: type == .double ? "total(\(argument))" : "coalesce(sum(\(argument)), 0)"
            case .avg: "avg(\(argument))"
            case .min: "min(\(argument))"
            case .max: "max(\(argument))"
            }
        }
        let seconds = "(extract(epoch from \(argument)) - 978307200)"
        return switch (function, type) {
        case (.count, _): "count(\(argument))"
        case (.sum, .bool?): "coalesce(sum((\(argument))::int), 0)::bigint"
        case (.sum, .date?): "to_timestamp(coalesce(sum(\(seconds)), 0) + 978307200)"
        case (.sum, .double?), (.sum, .decimal?): "coalesce(sum(\(argument)), 0)"
        case (.sum, _): "coalesce(sum(\(argument)), 0)::bigint"
        case (.avg, .date?): "avg(\(seconds))::double precision"
        case (.avg, .bool?): "avg((\(argument))::int)::double precision"
        case (.avg, _): "avg((\(argument))::double precision)"
        case (.min, .bool?): "bool_and(\(argument))"
        case (.max, .bool?): "bool_or(\(argument))"
        case (.min, _): "min(\(argument))"
        case (.max, _): "max(\(argument))"
        }
    }

    /// The type of the attribute at the end of a key path of to-ones, or nil.
    func attributeType(_ path: [String], _ start: EntityInfo) -> AttributeType? {
        var entity = start
        for key in path.dropLast() {
            guard let index = entity.relationshipIndex[key], !entity.relationships[index].isToMany,
                  let next = schema.entity(entity.relationships[index].destination) else { return nil }
            entity = next
        }
        guard let last = path.last, let index = entity.attributeIndex[last] else { return nil }
        return entity.attributes[index].type
    }

    /// A key the store cannot compare: not the entity's, or transient (no column; Core Data
    /// refuses those in SQL fetches too).
    static func unknownKey(_ key: String, _ entity: EntityInfo) -> QueryPredicateError {
        guard entity.transientIndex[key] != nil else { return QueryPredicateError("entity \(entity.name) has no key '\(key)'", column: 0) }
        return QueryPredicateError("\(entity.name).\(key) is a transient attribute, which the store does not keep: a fetch cannot filter or sort on it (filter or sort the fetched objects instead)", column: 0)
    }

    /// The first to-many relationship on a path: the path up to and including it, and the rest.
    func splitAtToMany(_ path: [String], _ start: EntityInfo) throws -> (prefix: [String], rest: [String])? {
        if path.count == 1, expressionAliases[path[0]] != nil { return nil }
        var entity = start
        for (index, key) in path.enumerated() {
            guard let r = entity.relationshipIndex[key] else {
                if entity.attributeIndex[key] != nil { return nil }
                throw Self.unknownKey(key, entity)
            }
            let relationship = entity.relationships[r]
            if relationship.isToMany { return (Array(path[...index]), Array(path[(index + 1)...])) }
            entity = schema.entity(relationship.destination)!
        }
        return nil
    }

    /// FROM and WHERE for a correlated subquery over the members of the to-many at the
    /// end of `path` (to-ones before it are joined inside the subquery).
    @_optimize(none)
    mutating func subquery(from scope: inout Scope, through path: [String]) throws -> (String, String, Scope) {
        var ownerColumn = "\(scope.alias).\"_pk\""
        var entity = scope.entity
        if path.count > 1 {
            let owner = try ownerKey(Array(path.dropLast()), &scope)
            ownerColumn = owner.column
            entity = owner.entity
        }
        let key = path.last!
        let relationship = entity.relationships[entity.relationshipIndex[key]!]
        let destination = schema.entity(relationship.destination)!
        aliasCounter += 1
        let alias = "s\(aliasCounter)"
        let child = Scope(alias: alias, entity: destination, isOuter: false)
        switch relationship.storage {
        case .inverseColumn(let fk):
            return ("\(destination.table) \(alias)", "\(alias).\(quoted(fk)) = \(ownerColumn)", child)
        case .joinTable(let table, let source, let other):
            aliasCounter += 1
            let join = "m\(aliasCounter)"
            return ("\(quoted(table)) \(join) JOIN \(destination.table) \(alias) ON \(alias).\"_pk\" = \(join).\(quoted(other))",
                    "\(join).\(quoted(source)) = \(ownerColumn)", child)
        case .column:
            throw QueryPredicateError("'\(key)' is not a to-many relationship", column: 0)
        }
    }

    /// The `_pk` column of the object reached through `path` (to-ones), joined as needed.
    mutating func ownerKey(_ path: [String], _ scope: inout Scope) throws -> (column: String, entity: EntityInfo) {
        var entity = scope.entity
        var alias = scope.alias
        for key in path {
            let relationship = entity.relationships[entity.relationshipIndex[key]!]
            guard case .column(let fk) = relationship.storage else {
                throw QueryPredicateError("only one to-many relationship may stand in a key path", column: 0)
            }
            let destination = schema.entity(relationship.destination)!
            alias = join(destination, from: alias, through: fk, key: key, &scope, rejectsNull: false)
            entity = destination
        }
        return ("\(alias).\"_pk\"", entity)
    }

    /// The alias of `destination` joined to `alias` through its to-one column `fk`:
    /// one join per path prefix and scope, inner only while every use rejects NULL.
    mutating func join(_ destination: EntityInfo, from alias: String, through fk: String, key: String,
                               _ scope: inout Scope, rejectsNull: Bool) -> String {
        let prefix = alias + "." + key
        let next: String
        if let existing = scope.isOuter ? joinAliases[prefix] : scope.localAliases[prefix] {
            next = existing
        } else {
            aliasCounter += 1
            next = "j\(aliasCounter)"
            let on = "\(destination.table) \(next) ON \(next).\"_pk\" = \(alias).\(quoted(fk))"
            if scope.isOuter {
                joinList.append((next, on))
                joinAliases[prefix] = next
            } else {
                scope.localJoins.append("LEFT JOIN " + on)
                scope.localAliases[prefix] = next
            }
        }
        if scope.isOuter { joinInner[next] = (joinInner[next] ?? true) && rejectsNull }
        return next
    }
}
