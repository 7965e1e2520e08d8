import Foundation
import CSQLite

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
    /// The store whose row numbers objects in the predicate are compared by.
    let storeID: UUID
    private(set) var arguments: [Value?] = []
    /// Joins for to-one key paths of the outer query, in order. A join is LEFT unless
    /// every use of it rejects NULL (a positive comparison that a missing object can
    /// only fail); then it is an inner join, which lets SQLite start from the other
    /// table's index (`owner.name IN …` → the owners first, then their items).
    var joins: [String] {
        joinList.map { (joinInner[$0.alias] == true ? "JOIN " : "LEFT JOIN ") + $0.clause }
    }
    var joinList: [(alias: String, clause: String)] = []
    var joinInner: [String: Bool] = [:]
    var joinAliases: [String: String] = [:]
    /// Whether the key path being resolved now is used in a NULL-rejecting way.
    var useRejectsNull = false
    private var inDisjunction = false
    var aliasCounter = 0
    /// Whether the condition being compiled stands under a NOT. SQL's NULL is "false"
    /// where the result is used directly, which lets plain comparisons use indexes; only
    /// under a NOT must a NULL comparison be turned into 0 first (`guarded`).
    private var negated = false
    /// Named expressions of a dictionary fetch (`total` for `sum(views)`), usable in HAVING.
    var expressionAliases: [String: String] = [:]

    init(schema: Schema, dialect: SQLDialect = .sqlite, storeID: UUID) {
        self.schema = schema
        self.dialect = dialect
        self.storeID = storeID
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
        return descriptor.sqlTerm(type == .decimal ? byNumber(sql) : sql, dialect, isText: type == .string)
    }

    /// A decimal column (or the minimum or maximum of one) as SQL that orders by number.
    /// SQLite keeps decimals as canonical text (`DecimalText`): equal numbers are equal
    /// bytes, so only ordering needs the collation, and equality keeps using plain indexes
    /// (uniqueness keys, the object path's `key IN …` lookups). PostgreSQL's `numeric`
    /// orders by number itself.
    func byNumber(_ sql: String) -> String {
        dialect == .sqlite ? "\(sql) COLLATE \(PredicateFunctions.decimalCollation)" : sql
    }

    /// The SQL for a key path of attributes through to-ones, and the attribute's type
    /// (nil for a relationship, whose column holds the row number).
    @_optimize(none)
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

    @_optimize(none)
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

    @_optimize(none)
    private mutating func compile(_ c: PredicateComparison, _ scope: inout Scope) throws -> String {
        // `9 < v` is `v > 9`: a decimal column on the left decides how the value compares.
        if case .value = c.left, case .keyPath(let path) = c.right, c.quantifier == nil, let mirrored = c.op.mirrored,
           attributeType(path, scope.entity) == .decimal {
            var flipped = c
            (flipped.left, flipped.right, flipped.op) = (c.right, c.left, mirrored)
            return try compile(flipped, &scope)
        }
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
    @_optimize(none)
    private mutating func comparison(_ c: PredicateComparison, left: Operand, _ scope: inout Scope) throws -> String {
        // Objects become the row numbers the relationship's column holds.
        var c = try c.objectsAsKeys(destination: left.destination, schema: schema, storeID: storeID)
        var left = left
        // A date compared with ISO 8601 text ('2001-03-01T00:00:00Z') compares as dates.
        if case .column(_, .date?) = left { c.right = ValueComparison.datesFromText(c.right) }
        // A decimal compares with numbers (and decimal text) by number, whatever their form;
        // text searches (BEGINSWITH, LIKE, …) read its canonical text.
        let decimal = left.type == .decimal
        if decimal && c.op.searchesText {
            left = .expression(dialect == .postgres ? "(\(left.sql))::text" : left.sql)
        } else if decimal {
            c.right = ValueComparison.decimalsFromNumbers(c.right)
        } else {
            c.right = ValueComparison.doublesFromDecimals(c.right)
        }
        func ordered(_ sql: String) -> String { decimal ? byNumber(sql) : sql }
        let folded = !c.options.isEmpty && !decimal
        func fold(_ sql: String) -> String { folded ? "ingest_fold(\(sql), \(c.options.rawValue))" : sql }
        switch (c.op, c.right) {
        case (.in, .list(let items)), (.between, .list(let items)):
            let present = items.compactMap { $0 }
            if c.op == .between {
                guard items.count == 2, let low = items[0], let high = items[1] else { return falseSQL }
                try checkType(left, low)
                try checkType(left, high)
                return "\(guarded("\(ordered(fold(left.sql))) BETWEEN \(fold(bind(low))) AND \(fold(bind(high)))"))"
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
            return "\(guarded("\(ordered(fold(left.sql))) \(symbol) \(fold(right.sql))"))"
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
        case (.string, .string), (.uuid, .uuid), (.uuid, .string), (.decimal, .decimal),
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
