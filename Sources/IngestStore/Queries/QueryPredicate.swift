/// A condition on objects, in NSPredicate's language: `views > 100 AND title CONTAINS[c] "harbour"`,
/// `whoTook.name = %@`, `ANY tags.name IN %@`, `photos.@count > 5`.
///
/// Build one from a format string with `QueryPredicate(format:_:)`, or in code with
/// `&&`, `||` and `!`. (Named so as not to clash with Foundation's `Predicate`.)
public indirect enum QueryPredicate: Sendable, Hashable {
    case constant(Bool)
    case not(QueryPredicate)
    case and([QueryPredicate])
    case or([QueryPredicate])
    case comparison(PredicateComparison)

    public static func && (lhs: QueryPredicate, rhs: QueryPredicate) -> QueryPredicate { .and([lhs, rhs]) }
    public static func || (lhs: QueryPredicate, rhs: QueryPredicate) -> QueryPredicate { .or([lhs, rhs]) }
    public static prefix func ! (predicate: QueryPredicate) -> QueryPredicate { .not(predicate) }
}

/// `left op right`, optionally quantified over a to-many key path.
public struct PredicateComparison: Sendable, Hashable {
    public enum Operator: String, Sendable, Hashable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case between = "BETWEEN"
        case `in` = "IN"
        case beginsWith = "BEGINSWITH"
        case endsWith = "ENDSWITH"
        case contains = "CONTAINS"
        case like = "LIKE"
        case matches = "MATCHES"
    }

    /// ANY, ALL or NONE over the to-many key path on the left.
    public enum Quantifier: String, Sendable, Hashable { case any = "ANY", all = "ALL", notAny = "NONE" }

    /// `[c]` case-insensitive, `[d]` diacritic-insensitive.
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let caseInsensitive = Options(rawValue: 1)
        public static let diacriticInsensitive = Options(rawValue: 2)
    }

    public var quantifier: Quantifier?
    public var left: PredicateExpression
    public var op: Operator
    public var right: PredicateExpression
    public var options: Options

    public init(_ left: PredicateExpression, _ op: Operator, _ right: PredicateExpression, options: Options = [], quantifier: Quantifier? = nil) {
        self.left = left
        self.op = op
        self.right = right
        self.options = options
        self.quantifier = quantifier
    }
}

/// One side of a comparison.
public indirect enum PredicateExpression: Sendable, Hashable {
    /// An attribute or relationship, possibly through relationships: `whoTook.name`.
    case keyPath([String])
    /// A value; nil is NIL/NULL.
    case value(Value?)
    /// A list, for IN and BETWEEN: `{1, 5}` or an array argument.
    case list([Value?])
    /// An aggregate over a to-many key path: `photos.@count`, `photos.@sum.views`.
    case aggregate(AggregateFunction, relationship: [String], attribute: [String])
    /// `$NAME`, replaced by `substituting(_:)`.
    case variable(String)
    /// An object, compared with a to-one relationship (`whoTook == %@`): equal when the
    /// relationship holds that very object.
    case object(ObjectID)
    /// Objects (nil for none), for a to-one relationship's IN.
    case objects([ObjectID?])
}

/// Functions over the members of a to-many relationship.
public enum AggregateFunction: String, Sendable, Hashable {
    case count, sum, avg, min, max
}

extension QueryPredicate {
    /// Replaces `$NAME` variables with values: Swift values as they are, as a format's
    /// arguments (`["MIN": 3, "WHO": photographer]`).
    /// - Throws: `QueryPredicateError` naming a variable the dictionary does not have, or
    ///   whose value stands for no argument (a list holding lists).
    public func substituting(_ variables: [String: (any PredicateArgumentConvertible)?]) throws -> QueryPredicate {
        func expression(_ e: PredicateExpression) throws -> PredicateExpression {
            guard case .variable(let name) = e else { return e }
            guard let entry = variables[name] else { throw QueryPredicateError("no value for variable $\(name)", column: 0) }
            do {
                return try (entry?.predicateArgument() ?? .value(nil)).expression
            } catch let error as PredicateArgumentError {
                throw QueryPredicateError("$\(name) is \(error.found ?? "no value a predicate takes")", column: 0)
            }
        }
        switch self {
        case .constant: return self
        case .not(let p): return .not(try p.substituting(variables))
        case .and(let ps): return .and(try ps.map { try $0.substituting(variables) })
        case .or(let ps): return .or(try ps.map { try $0.substituting(variables) })
        case .comparison(var c):
            c.left = try expression(c.left)
            c.right = try expression(c.right)
            return .comparison(c)
        }
    }
}

/// A format string that cannot be parsed, or a predicate that does not fit its entity.
public struct QueryPredicateError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    /// 1-based column in the format string (0 when the error is not about one place).
    public var column: Int

    public init(_ message: String, column: Int) {
        self.message = message
        self.column = column
    }

    public var description: String { column > 0 ? "\(message) at column \(column)" : message }
}
