import Foundation
import GRDB
import GRDBSQLite

/// Compiles a predicate into a SQL condition over an entity's table (alias `t0`), with
/// every value bound, never spliced. The SQL means what `evaluate(with:)` means on
/// every row: NULLs are handled as the in-memory rules handle nil, and the string
/// operators call the same folding, LIKE and regular-expression code through SQL
/// functions registered on every connection (`PredicateFunctions`). On PostgreSQL the
/// conditions are booleans rather than 0 and 1, and the functions of the same names are
/// SQL ones the store makes (`PostgresStore.functions`).
struct PredicateCompiler {
    let schema: Schema
    let dialect: SQLDialect
    private(set) var arguments: [Value?] = []
    /// Joins for to-one key paths of the outer query, in order. A join is LEFT unless
    /// every use of it rejects NULL (a positive comparison that a missing object can
    /// only fail); then it is an inner join, which lets SQLite start from the other
    /// table's index (`owner.name IN …` → the owners first, then their items).
    var joins: [String] {
        joinList.map { (joinInner[$0.alias] == true ? "JOIN " : "LEFT JOIN ") + $0.clause }
    }
    private var joinList: [(alias: String, clause: String)] = []
    private var joinInner: [String: Bool] = [:]
    private var joinAliases: [String: String] = [:]
    /// Whether the key path being resolved now is used in a NULL-rejecting way.
    private var useRejectsNull = false
    private var inDisjunction = false
    private var aliasCounter = 0
    /// Whether the condition being compiled stands under a NOT. SQL's NULL is "false"
    /// where the result is used directly, which lets plain comparisons use indexes; only
    /// under a NOT must a NULL comparison be turned into 0 first (`guarded`).
    private var negated = false
    /// Named expressions of a dictionary fetch (`total` for `sum(views)`), usable in HAVING.
    var expressionAliases: [String: String] = [:]

    init(schema: Schema, dialect: SQLDialect = .sqlite) {
        self.schema = schema
        self.dialect = dialect
    }

    private var trueSQL: String { dialect == .postgres ? "true" : "1" }
    private var falseSQL: String { dialect == .postgres ? "false" : "0" }

    /// `LIMIT`'s operand: the limit bound, or none.
    mutating func bindLimit(_ limit: Int?) -> String {
        if limit == nil && dialect == .postgres { return "ALL" }
        return bind(.int(Int64(limit ?? -1)))
    }

    /// A condition that is 1 for the rows that satisfy `predicate`, 0 otherwise (never NULL).
    mutating func condition(_ predicate: QueryPredicate, entity: EntityInfo) throws -> String {
        var scope = Scope(alias: "t0", entity: entity, isOuter: true)
        return try compile(predicate, &scope)
    }

    /// The column a sort key names (an attribute, possibly through to-one relationships).
    mutating func sortColumn(_ path: [String], entity: EntityInfo) throws -> String {
        try columnWithType(path, entity: entity).sql
    }

    /// The ORDER BY term of a sort descriptor.
    mutating func sortTerm(_ descriptor: FetchSortDescriptor, entity: EntityInfo) throws -> String {
        let (sql, type) = try columnWithType(descriptor.path, entity: entity)
        return descriptor.sqlTerm(sql, dialect, isText: type == .string)
    }

    /// The SQL for a key path of attributes through to-ones, and the attribute's type
    /// (nil for a relationship, whose column holds the row number).
    mutating func columnWithType(_ path: [String], entity: EntityInfo) throws -> (sql: String, type: AttributeType?) {
        if path.count == 1, let alias = expressionAliases[path[0]] { return (alias, nil) }
        var scope = Scope(alias: "t0", entity: entity, isOuter: true)
        // `posts.@count`, `photos.@max.views`: an aggregate over a to-many, per row.
        if let at = path.firstIndex(where: { $0.hasPrefix("@") }) {
            let name = String(path[at].dropFirst())
            guard let function = AggregateFunction(rawValue: name == "average" ? "avg" : name) else {
                throw QueryPredicateError("unknown aggregate '@\(name)' (expected @count, @sum, @avg, @min, @max)", column: 0)
            }
            let attribute = Array(path[(at + 1)...])
            if function != .count && attribute.isEmpty {
                throw QueryPredicateError("@\(name) needs an attribute after it, as in photos.@\(name).views", column: 0)
            }
            let operand = try operand(.aggregate(function, relationship: Array(path[..<at]), attribute: attribute), &scope)
            return (operand.sql, function == .count ? .int64 : nil)
        }
        if try splitAtToMany(path, entity) != nil {
            throw QueryPredicateError("the to-many key path \(path.joined(separator: ".")) cannot stand here", column: 0)
        }
        let operand = try column(path, &scope)
        return (operand.sql, operand.type)
    }

    /// Where a key path resolves: the root table of the query, or a subquery's.
    struct Scope {
        var alias: String
        var entity: EntityInfo
        var isOuter: Bool
        var localJoins: [String] = []
        var localAliases: [String: String] = [:]
    }

    private mutating func compile(_ predicate: QueryPredicate, _ scope: inout Scope) throws -> String {
        switch predicate {
        case .constant(let flag): return flag ? trueSQL : falseSQL
        case .not(let inner):
            negated.toggle()
            defer { negated.toggle() }
            return "NOT (\(try compile(inner, &scope)))"
        case .and(let terms): return "(" + (try terms.map { try compile($0, &scope) }).joined(separator: " AND ") + ")"
        case .or(let terms):
            let outer = inDisjunction
            inDisjunction = true
            defer { inDisjunction = outer }
            return "(" + (try terms.map { try compile($0, &scope) }).joined(separator: " OR ") + ")"
        case .comparison(let comparison): return try compile(comparison, &scope)
        }
    }

    // MARK: - Comparisons

    private mutating func compile(_ c: PredicateComparison, _ scope: inout Scope) throws -> String {
        guard case .keyPath(let path) = c.left, let split = try splitAtToMany(path, scope.entity) else {
            // No to-many on the left: a plain comparison (a quantifier over a to-one path
            // treats it as a collection of one, as evaluate does).
            if c.quantifier == .notAny {
                negated.toggle()
                defer { negated.toggle() }
                useRejectsNull = false
                return "NOT (\(try comparison(c, left: try operand(c.left, &scope), &scope)))"
            }
            useRejectsNull = !negated && !inDisjunction && Self.rejectsNull(c)
            defer { useRejectsNull = false }
            return try comparison(c, left: try operand(c.left, &scope), &scope)
        }
        guard let quantifier = c.quantifier else {
            throw QueryPredicateError("a to-many key path is compared without ANY, ALL or NONE", column: 0)
        }
        var inner = c
        inner.left = .keyPath(split.rest)
        // A further to-many inside flattens, as in memory: ALL stays ALL, ANY and NONE look for any.
        inner.quantifier = quantifier == .all ? .all : .any
        let (from, link, child) = try subquery(from: &scope, through: split.prefix)
        var childScope = child
        // EXISTS is never NULL: inside it only ALL's NOT (test) stands negated.
        let outerPolarity = negated
        negated = quantifier == .all
        let test = try compile(.comparison(inner), &childScope)
        negated = outerPolarity
        let joins = childScope.localJoins.joined(separator: " ")
        let body = "SELECT 1 FROM \(from) \(joins) WHERE \(link)"
        switch quantifier {
        case .any: return "EXISTS (\(body) AND \(test))"
        case .notAny: return "NOT EXISTS (\(body) AND \(test))"
        case .all: return "NOT EXISTS (\(body) AND NOT (\(test)))"
        }
    }

    private func guarded(_ sql: String) -> String { negated ? "coalesce(\(sql), \(falseSQL))" : sql }

    /// Whether the comparison is false whenever its left side is NULL.
    private static func rejectsNull(_ c: PredicateComparison) -> Bool {
        switch (c.op, c.right) {
        case (.notEqual, _), (.equal, .value(nil)): return false
        case (.in, .list(let items)): return !items.contains(nil)
        default: return true
        }
    }

    /// The test itself: true exactly where `evaluate` is (NULL standing for false, or
    /// turned into 0 under a NOT).
    private mutating func comparison(_ c: PredicateComparison, left: Operand, _ scope: inout Scope) throws -> String {
        var c = c
        // A date compared with ISO 8601 text ('2001-03-01T00:00:00Z') compares as dates.
        if case .column(_, .date?) = left { c.right = ValueComparison.datesFromText(c.right) }
        let folded = !c.options.isEmpty
        func fold(_ sql: String) -> String { folded ? "ingest_fold(\(sql), \(c.options.rawValue))" : sql }
        switch (c.op, c.right) {
        case (.in, .list(let items)), (.between, .list(let items)):
            let present = items.compactMap { $0 }
            if c.op == .between {
                guard items.count == 2, let low = items[0], let high = items[1] else { return falseSQL }
                try checkType(left, low)
                try checkType(left, high)
                return "\(guarded("\(fold(left.sql)) BETWEEN \(fold(bind(low))) AND \(fold(bind(high)))"))"
            }
            for value in present { try checkType(left, value) }
            var parts: [String] = []
            if !present.isEmpty {
                parts.append("\(guarded("\(fold(left.sql)) IN (\(present.map { fold(bind($0)) }.joined(separator: ", ")))"))")
            }
            if present.count < items.count { parts.append("\(left.sql) IS NULL") }
            return parts.isEmpty ? falseSQL : "(" + parts.joined(separator: " OR ") + ")"
        case (.in, _), (.between, _):
            throw QueryPredicateError("\(c.op.rawValue) needs a list on its right", column: 0)
        case (_, .list):
            throw QueryPredicateError("\(c.op.rawValue) cannot compare with a list", column: 0)
        default:
            break
        }
        let right = try operand(c.right, &scope)
        if case .value(let value?, _) = right { try checkType(left, value) }
        switch c.op {
        case .equal, .notEqual:
            // `a != b` is NOT (a = b): the equality stands negated.
            if c.op == .notEqual { negated.toggle() }
            defer { if c.op == .notEqual { negated.toggle() } }
            let isNull = right.isNil
            let sql: String
            if isNull {
                sql = "\(left.sql) IS NULL"
            } else if left.isText && folded {
                sql = "\(guarded("\(fold(left.sql)) = \(fold(right.sql))"))"
            } else {
                sql = "\(guarded("\(left.sql) = \(right.sql)"))"
            }
            return c.op == .equal ? sql : "NOT (\(sql))"
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            let symbol = c.op.rawValue
            if right.isNil { return falseSQL }
            return "\(guarded("\(fold(left.sql)) \(symbol) \(fold(right.sql))"))"
        case .beginsWith:
            return "\(guarded("\(position)(\(fold(left.sql)), \(fold(right.sql))) = 1"))"
        case .endsWith:
            let l = fold(left.sql), r = fold(right.sql)
            if dialect == .postgres { return guarded("right(\(l), length(\(r))) = \(r)") }
            // By bytes: SQLite's length() of text counts only up to a NUL character (a suffix
            // "\u{0}c" had length 0, so every row ended with it); a UTF-8 suffix by bytes is one by characters.
            let (lb, rb) = ("CAST(\(l) AS BLOB)", "CAST(\(r) AS BLOB)")
            return "\(guarded("length(\(rb)) = 0 AND \(l) IS NOT NULL OR substr(\(lb), -length(\(rb))) = \(rb)"))"
        case .contains:
            return "\(guarded("\(position)(\(fold(left.sql)), \(fold(right.sql))) > 0"))"
        case .like:
            return "\(guarded("ingest_like(\(fold(left.sql)), \(fold(right.sql)))"))"
        case .matches:
            return "\(guarded("ingest_matches(\(left.sql), \(right.sql), \(c.options.rawValue))"))"
        case .in, .between:
            throw QueryPredicateError("\(c.op.rawValue) needs a list on its right", column: 0)
        }
    }

    /// The function that finds text in text: 1-based, 0 when absent.
    private var position: String { dialect == .postgres ? "strpos" : "instr" }

    // MARK: - Operands

    enum Operand {
        case column(String, AttributeType?)
        case value(Value?, String)
        case expression(String)

        var sql: String {
            switch self {
            case .column(let sql, _), .value(_, let sql), .expression(let sql): sql
            }
        }
        var isNil: Bool { if case .value(nil, _) = self { true } else { false } }
        var isText: Bool {
            switch self {
            case .column(_, let type): type == .string || type == .uuid || type == .decimal
            case .value(let v, _): v?.stringValue != nil
            case .expression: false
            }
        }
        var type: AttributeType? { if case .column(_, let t) = self { t } else { nil } }
    }

    private mutating func operand(_ expression: PredicateExpression, _ scope: inout Scope) throws -> Operand {
        switch expression {
        case .value(let value): return .value(value, value == nil ? "NULL" : bind(value))
        case .list: throw QueryPredicateError("a list can only stand on the right of IN or BETWEEN", column: 0)
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
            return .expression("(SELECT \(aggregate(function, value.sql, type: value.type)) FROM \(from) \(joins) WHERE \(link))")
        }
    }

    /// A column at the end of a path of to-one relationships, joining tables as needed.
    private mutating func column(_ path: [String], _ scope: inout Scope) throws -> Operand {
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
                throw QueryPredicateError("entity \(entity.name) has no key '\(key)'", column: 0)
            }
            let relationship = entity.relationships[index]
            guard case .column(let fk) = relationship.storage else {
                throw QueryPredicateError("'\(key)' is a to-many relationship: compare its members' attributes, or use @count", column: 0)
            }
            if isLast { return .column("\(alias).\(quoted(fk))", nil) }
            let destination = schema.entity(relationship.destination)!
            alias = join(destination, from: alias, through: fk, key: key, &scope, rejectsNull: useRejectsNull)
            entity = destination
        }
        throw QueryPredicateError("an empty key path", column: 0)
    }

    /// An aggregate of `argument` (a column of `type`, or `*`), giving what SQLite gives:
    /// sums of integers are integers (an overflow is an error on both), averages doubles
    /// (of dates: seconds since 2001), the minimum and maximum of booleans booleans.
    func aggregate(_ function: AggregateFunction, _ argument: String, type: AttributeType?) -> String {
        guard dialect == .postgres else {
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
        case (.sum, .double?): "coalesce(sum(\(argument)), 0)"
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

    /// The first to-many relationship on a path: the path up to and including it, and the rest.
    private func splitAtToMany(_ path: [String], _ start: EntityInfo) throws -> (prefix: [String], rest: [String])? {
        if path.count == 1, expressionAliases[path[0]] != nil { return nil }
        var entity = start
        for (index, key) in path.enumerated() {
            guard let r = entity.relationshipIndex[key] else {
                if entity.attributeIndex[key] != nil { return nil }
                throw QueryPredicateError("entity \(entity.name) has no key '\(key)'", column: 0)
            }
            let relationship = entity.relationships[r]
            if relationship.isToMany { return (Array(path[...index]), Array(path[(index + 1)...])) }
            entity = schema.entity(relationship.destination)!
        }
        return nil
    }

    /// FROM and WHERE for a correlated subquery over the members of the to-many at the
    /// end of `path` (to-ones before it are joined inside the subquery).
    private mutating func subquery(from scope: inout Scope, through path: [String]) throws -> (String, String, Scope) {
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
    private mutating func ownerKey(_ path: [String], _ scope: inout Scope) throws -> (column: String, entity: EntityInfo) {
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
    private mutating func join(_ destination: EntityInfo, from alias: String, through fk: String, key: String,
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

    /// A numbered parameter (`?3`): an operand may appear more than once in the SQL
    /// (ENDSWITH uses its pattern three times) and must stay one bound value.
    mutating func bind(_ value: Value?) -> String {
        arguments.append(value)
        return "?\(arguments.count)"
    }

    /// Comparing a column with a value of another kind is almost always a mistake, and
    /// SQLite's type affinity would give answers the in-memory rules do not.
    private func checkType(_ operand: Operand, _ value: Value) throws {
        guard case .column(let sql, let type?) = operand else { return }
        let fits: Bool = switch (type, value) {
        case (.string, .string), (.uuid, .uuid), (.uuid, .string), (.decimal, .decimal), (.decimal, .string),
             (.bool, .bool), (.date, .date), (.binary, .binary): true
        case (.int16, .int), (.int32, .int), (.int64, .int), (.int16, .double), (.int32, .double), (.int64, .double),
             (.double, .int), (.double, .double): true
        default: false
        }
        guard fits else {
            throw QueryPredicateError("\(sql.split(separator: ".").last ?? "") is \(type.rawValue); it cannot be compared with \(value)", column: 0)
        }
    }
}

/// The SQL functions compiled predicates call, registered on every connection, so that
/// SQL and in-memory evaluation share one definition of folding, LIKE and MATCHES.
///
/// Registered through SQLite's C API rather than GRDB's `DatabaseFunction`, which reads an
/// argument's text as a C string: a value with a NUL character ("a\u{0}b") reached the
/// function cut at the NUL, so `id ==[c] "a"` matched it (found by probing). Here each
/// argument is read, and the result given, with its byte count.
enum PredicateFunctions {
    static func register(_ db: Database) {
        db.add(collation: DatabaseCollation("ingest_localized") { a, b in a.localizedStandardCompare(b) })
        add("ingest_fold", arguments: 2, to: db) { context, values in
            guard let text = argumentText(values[0]), let flags = integer(values[1]) else { return sqlite3_result_null(context) }
            result(ValueComparison.fold(text, PredicateComparison.Options(rawValue: Int(flags))), context)
        }
        add("ingest_like", arguments: 2, to: db) { context, values in
            guard let text = argumentText(values[0]), let pattern = argumentText(values[1]) else { return sqlite3_result_null(context) }
            sqlite3_result_int(context, ValueComparison.like(Array(text.unicodeScalars), Array(pattern.unicodeScalars)) ? 1 : 0)
        }
        add("ingest_matches", arguments: 3, to: db) { context, values in
            guard let text = argumentText(values[0]), let pattern = argumentText(values[1]), let flags = integer(values[2]) else {
                return sqlite3_result_null(context)
            }
            do {
                let matches = try ValueComparison.test(.string(text), .matches, .string(pattern), PredicateComparison.Options(rawValue: Int(flags)))
                sqlite3_result_int(context, matches ? 1 : 0)
            } catch {
                sqlite3_result_error(context, "\(error)", -1)
            }
        }
    }

    typealias Body = (OpaquePointer?, [OpaquePointer?]) -> Void

    /// A deterministic function of `arguments` values, calling `body` with its context and arguments.
    private static func add(_ name: String, arguments: Int32, to db: Database, _ body: @escaping Body) {
        final class Box { let body: Body; init(_ body: @escaping Body) { self.body = body } }
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        sqlite3_create_function_v2(db.sqliteConnection, name, arguments, SQLITE_UTF8 | SQLITE_DETERMINISTIC, box, { context, count, values in
            let box = Unmanaged<Box>.fromOpaque(sqlite3_user_data(context)).takeUnretainedValue()
            box.body(context, (0..<Int(count)).map { values![$0] })
        }, nil, nil, { box in Unmanaged<Box>.fromOpaque(box!).release() })
    }

    /// An argument's text, NUL characters included; nil for NULL.
    private static func argumentText(_ value: OpaquePointer?) -> String? {
        guard sqlite3_value_type(value) != SQLITE_NULL, let bytes = sqlite3_value_text(value) else { return nil }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(value))), as: UTF8.self)
    }

    private static func integer(_ value: OpaquePointer?) -> Int64? {
        sqlite3_value_type(value) == SQLITE_NULL ? nil : sqlite3_value_int64(value)
    }

    private static func result(_ text: String, _ context: OpaquePointer?) {
        var text = text
        text.withUTF8 { sqlite3_result_text(context, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), Int32($0.count), SQLITE_TRANSIENT) }
    }
}
