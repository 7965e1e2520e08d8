import Foundation

extension QueryPredicate {
    /// Parses NSPredicate's format syntax. Arguments are Swift values as they are, and
    /// fill, in order, `%@` (a value, a list for IN, an object for a to-one relationship,
    /// nil), `%K` (a key path, given as a string), `%d %i %ld %lld` (integers) and `%f`
    /// (numbers). They become bound values, never SQL text.
    ///
    /// `QueryPredicate(format: "whoTook == %@ AND views > %d AND %K IN %@", ana, 100, "title", titles)`
    /// - Throws: `QueryPredicateError` saying what was expected, at which column;
    ///   `PredicateArgumentError` for too few or too many arguments, or one its specifier
    ///   does not take, naming its position and the specifier.
    public init(format: String, _ arguments: (any PredicateArgumentConvertible)?...) throws {
        try self.init(format: format, arguments: arguments)
    }

    /// The same, with the arguments as an array (`PredicateArgument`s or Swift values).
    /// - Throws: as `init(format:_:)`.
    public init(format: String, arguments: [(any PredicateArgumentConvertible)?]) throws {
        var parser = PredicateParser(tokens: try PredicateTokenizer.tokens(format), arguments: arguments,
                                     end: format.count + 1)
        self = try parser.parse()
    }
}

/// Recursive descent over the tokens: OR binds loosest, then AND, then NOT.
struct PredicateParser {
    let tokens: [PredicateToken]
    var arguments: [(any PredicateArgumentConvertible)?]
    let end: Int
    var position = 0
    var nextArgument = 0
    /// Parentheses and NOTs open around the current token: the parse, and every walk of
    /// the tree it makes, recurses once a level, so the depth is bounded before the stack is.
    private var nesting = 0
    static let maxNesting = 256

    init(tokens: [PredicateToken], arguments: [(any PredicateArgumentConvertible)?], end: Int) {
        self.tokens = tokens
        self.arguments = arguments
        self.end = end
    }

    mutating func parse() throws -> QueryPredicate {
        guard !tokens.isEmpty else { throw QueryPredicateError("empty predicate", column: 1) }
        let predicate = try parseOr()
        if position < tokens.count {
            throw QueryPredicateError("expected AND, OR or the end of the predicate, found \(describe(tokens[position]))", column: tokens[position].column)
        }
        if nextArgument < arguments.count {
            throw PredicateArgumentError(.unused, position: nextArgument + 1)
        }
        return predicate
    }

    // MARK: - Grammar

    private mutating func enter() throws {
        nesting += 1
        guard nesting <= Self.maxNesting else {
            throw QueryPredicateError("the predicate nests deeper than \(Self.maxNesting) levels of parentheses and NOT",
                                      column: tokens[position - 1].column)
        }
    }

    private mutating func parseOr() throws -> QueryPredicate {
        var terms = [try parseAnd()]
        while acceptWord("OR") || acceptSymbol("||") { terms.append(try parseAnd()) }
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    private mutating func parseAnd() throws -> QueryPredicate {
        var terms = [try parseNot()]
        while acceptWord("AND") || acceptSymbol("&&") { terms.append(try parseNot()) }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    private mutating func parseNot() throws -> QueryPredicate {
        if acceptWord("NOT") || acceptSymbol("!") {
            try enter()
            defer { nesting -= 1 }
            return .not(try parseNot())
        }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws -> QueryPredicate {
        if acceptSymbol("(") {
            try enter()
            defer { nesting -= 1 }
            let inner = try parseOr()
            try expectSymbol(")", "')' to close the parenthesis")
            return inner
        }
        if acceptWord("TRUEPREDICATE") { return .constant(true) }
        if acceptWord("FALSEPREDICATE") { return .constant(false) }
        var quantifier: PredicateComparison.Quantifier?
        if acceptWord("ANY") || acceptWord("SOME") { quantifier = .any }
        else if acceptWord("ALL") { quantifier = .all }
        else if acceptWord("NONE") { quantifier = .notAny }
        let left = try parseExpression()
        let (op, column) = try parseOperator()
        var options: PredicateComparison.Options = []
        if case .options(let o)? = peek?.kind {
            options = o
            position += 1
        }
        let right = try parseExpression(forList: op == .in || op == .between)
        if op == .between {
            guard case .list(let bounds) = right, bounds.count == 2 else {
                throw QueryPredicateError("BETWEEN needs two bounds, as {low, high}", column: column)
            }
        }
        return .comparison(PredicateComparison(left, op, right, options: options, quantifier: quantifier))
    }

    private mutating func parseOperator() throws -> (PredicateComparison.Operator, Int) {
        guard let token = peek else { throw QueryPredicateError("expected a comparison operator, found the end", column: end) }
        let column = token.column
        switch token.kind {
        case .symbol(let s):
            let map: [String: PredicateComparison.Operator] = ["=": .equal, "==": .equal, "!=": .notEqual, "<": .less,
                                                     "<=": .lessOrEqual, ">": .greater, ">=": .greaterOrEqual]
            if let op = map[s] { position += 1; return (op, column) }
        case .word(let w):
            let map: [String: PredicateComparison.Operator] = ["BETWEEN": .between, "IN": .in, "BEGINSWITH": .beginsWith,
                                                     "ENDSWITH": .endsWith, "CONTAINS": .contains, "LIKE": .like,
                                                     "MATCHES": .matches]
            if let op = map[w.uppercased()] { position += 1; return (op, column) }
        default:
            break
        }
        throw QueryPredicateError("expected a comparison operator (=, !=, <, <=, >, >=, BETWEEN, IN, BEGINSWITH, ENDSWITH, CONTAINS, LIKE, MATCHES), found \(describe(token))", column: column)
    }

    @_optimize(none)
    private mutating func parseExpression(forList: Bool = false) throws -> PredicateExpression {
        guard let token = peek else { throw QueryPredicateError("expected a key path or a value, found the end", column: end) }
        position += 1
        switch token.kind {
        case .string(let s): return .value(.string(s))
        case .number(let n):
            if let i = Int64(n) { return .value(.int(i)) }
            if let d = Double(n) {
                // A number a double cannot hold (a 30-digit integer) stays the decimal it writes,
                // so that decimals compare with it exactly; other numbers take its nearest double.
                if d.isFinite, let exact = DecimalText.canonical(n), exact != DecimalText.canonical(d) { return .value(.decimal(exact)) }
                return .value(.double(d))
            }
            throw QueryPredicateError("'\(n)' is not a number", column: token.column)
        case .variable(let name): return .variable(name)
        case .format(let spec): return try argument(spec, column: token.column)
        case .symbol("{"):
            var items: [Value?] = []
            if !acceptSymbol("}") {
                repeat {
                    guard case .value(let v) = try parseExpression() else {
                        throw QueryPredicateError("a list holds values only", column: tokens[position - 1].column)
                    }
                    items.append(v)
                } while acceptSymbol(",")
                try expectSymbol("}", "'}' to close the list")
            }
            return .list(items)
        case .word(let w):
            switch w.uppercased() {
            case "NIL", "NULL": return .value(nil)
            case "TRUE", "YES": return .value(.bool(true))
            case "FALSE", "NO": return .value(.bool(false))
            case "CAST" where peek.map({ if case .symbol("(") = $0.kind { true } else { false } }) == true:
                return try parseCast(column: token.column)
            default:
                position -= 1
                return try parseKeyPath(first: try expectKey())
            }
        default:
            throw QueryPredicateError("expected a key path or a value, found \(describe(token))", column: token.column)
        }
    }

    /// `CAST('2001-03-01T00:00:00Z', 'NSDate')` or `CAST(1234.5, 'NSDate')` (seconds since
    /// 2001, as NSPredicate reads a number): a date constant.
    private mutating func parseCast(column: Int) throws -> PredicateExpression {
        try expectSymbol("(", "'(' after CAST")
        let value = try parseExpression()
        try expectSymbol(",", "',' between CAST's value and its type")
        guard case .value(.string(let type)?) = try parseExpression(), type == "NSDate" || type == "Date" else {
            throw QueryPredicateError("CAST converts to 'NSDate' only", column: column)
        }
        try expectSymbol(")", "')' to close CAST")
        switch value {
        case .value(.string(let text)?):
            guard let date = ValueComparison.isoDate(text) else {
                throw QueryPredicateError("'\(text)' is not an ISO 8601 date (as in '2001-03-01T00:00:00Z')", column: column)
            }
            return .value(.date(date))
        case .value(.int(let seconds)?): return .value(.date(Date(timeIntervalSinceReferenceDate: Double(seconds))))
        case .value(.double(let seconds)?): return .value(.date(Date(timeIntervalSinceReferenceDate: seconds)))
        case .value(.decimal(let seconds)?) where Double(seconds) != nil:
            return .value(.date(Date(timeIntervalSinceReferenceDate: Double(seconds)!)))
        default: throw QueryPredicateError("CAST needs a string or a number", column: column)
        }
    }

    /// `name`, `whoTook.name`, `photos.@count`, `photos.@sum.views`.
    private mutating func parseKeyPath(first: String) throws -> PredicateExpression {
        var path = [first]
        while acceptSymbol(".") {
            if case .aggregate(let name)? = peek?.kind {
                let column = peek!.column
                position += 1
                guard let function = AggregateFunction(rawValue: name == "average" ? "avg" : name) else {
                    throw QueryPredicateError("unknown aggregate '@\(name)' (expected @count, @sum, @avg, @min, @max)", column: column)
                }
                var attribute: [String] = []
                while acceptSymbol(".") { attribute.append(try expectKey()) }
                if function != .count && attribute.isEmpty {
                    throw QueryPredicateError("@\(name) needs an attribute after it, as in photos.@\(name).views", column: column)
                }
                return .aggregate(function, relationship: path, attribute: attribute)
            }
            path.append(try expectKey())
        }
        return .keyPath(path)
    }

    /// The next argument, as the expression `%spec` makes of it.
    @_optimize(none)
    private mutating func argument(_ spec: String, column: Int) throws -> PredicateExpression {
        nextArgument += 1
        let position = nextArgument
        func wrongType(_ found: String) -> PredicateArgumentError {
            PredicateArgumentError(.wrongType, position: position, specifier: "%" + spec, found: found, column: column)
        }
        guard position <= arguments.count else {
            throw PredicateArgumentError(.missing, position: position, specifier: "%" + spec, column: column)
        }
        let argument: PredicateArgument
        do {
            argument = try arguments[position - 1]?.predicateArgument() ?? .value(nil)
        } catch let error as PredicateArgumentError {
            throw wrongType(error.found ?? "of no kind a predicate takes")
        }
        switch (spec, argument) {
        case ("K", .value(.string(let path)?)):
            // Keys are names, never parsed: a key may be spelled like a keyword (`%K` exists for them).
            let keys = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !keys.contains(where: \.isEmpty) else { throw wrongType("a string that is not a key path") }
            return .keyPath(keys)
        case ("@", _): return argument.expression
        case ("d", .value(.int?)), ("i", .value(.int?)), ("ld", .value(.int?)), ("lld", .value(.int?)):
            return argument.expression
        case ("f", .value(.double?)): return argument.expression
        case ("f", .value(.int(let i)?)): return .value(.double(Double(i)))
        default: throw wrongType(argument.kind)
        }
    }

    // MARK: - Tokens

    private var peek: PredicateToken? { position < tokens.count ? tokens[position] : nil }

    private mutating func acceptWord(_ word: String) -> Bool {
        if case .word(let w)? = peek?.kind, w.uppercased() == word {
            position += 1
            return true
        }
        return false
    }

    private mutating func acceptSymbol(_ symbol: String) -> Bool {
        if case .symbol(let s)? = peek?.kind, s == symbol {
            position += 1
            return true
        }
        return false
    }

    private mutating func expectSymbol(_ symbol: String, _ what: String) throws {
        guard acceptSymbol(symbol) else {
            throw QueryPredicateError("expected \(what), found \(peek.map(describe) ?? "the end")", column: peek?.column ?? end)
        }
    }

    private static let keywords: Set<String> = ["AND", "OR", "NOT", "ANY", "SOME", "ALL", "NONE", "IN", "BETWEEN",
                                                "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "MATCHES",
                                                "TRUEPREDICATE", "FALSEPREDICATE"]

    private mutating func expectKey() throws -> String {
        guard let token = peek, case .word(let w) = token.kind, !Self.keywords.contains(w.uppercased()) else {
            throw QueryPredicateError("expected a key, found \(peek.map(describe) ?? "the end")", column: peek?.column ?? end)
        }
        position += 1
        return w
    }

    private func describe(_ token: PredicateToken) -> String {
        switch token.kind {
        case .word(let w): "'\(w)'"
        case .aggregate(let a): "'@\(a)'"
        case .string(let s): "the string \"\(s)\""
        case .number(let n): "the number \(n)"
        case .symbol(let s): "'\(s)'"
        case .options: "comparison options"
        case .format(let f): "'%\(f)'"
        case .variable(let v): "'$\(v)'"
        }
    }
}
