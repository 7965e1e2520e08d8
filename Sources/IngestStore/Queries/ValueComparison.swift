import Foundation

/// How two values compare in a predicate; the SQL a predicate compiles to must agree.
enum ValueComparison {
    /// An ISO 8601 date literal as predicates accept it, compared with a date attribute:
    /// `2001-03-01T00:00:00Z`, with fractional seconds or an offset, or a day alone
    /// (`2001-03-01`, midnight UTC).
    static func isoDate(_ text: String) -> Date? {
        let styles: [Date.ISO8601FormatStyle] = [
            Date.ISO8601FormatStyle(),
            Date.ISO8601FormatStyle(includingFractionalSeconds: true),
            Date.ISO8601FormatStyle().year().month().day(),
        ]
        for style in styles { if let date = try? style.parse(text) { return date } }
        return nil
    }

    /// A comparison's right side with ISO 8601 text made dates, for a date on its left.
    static func datesFromText(_ expression: PredicateExpression) -> PredicateExpression {
        func date(_ value: Value?) -> Value? {
            guard case .string(let text)? = value, let date = isoDate(text) else { return value }
            return .date(date)
        }
        switch expression {
        case .value(let value): return .value(date(value))
        case .list(let items): return .list(items.map(date))
        default: return expression
        }
    }

    static func test(_ lhs: Value?, _ op: PredicateComparison.Operator, _ rhs: Value?, _ options: PredicateComparison.Options) throws -> Bool {
        switch op {
        case .equal: return equal(lhs, rhs, options)
        case .notEqual: return !equal(lhs, rhs, options)
        case .less: return order(lhs, rhs, options) == .orderedAscending
        case .lessOrEqual: return [.orderedAscending, .orderedSame].contains(order(lhs, rhs, options))
        case .greater: return order(lhs, rhs, options) == .orderedDescending
        case .greaterOrEqual: return [.orderedDescending, .orderedSame].contains(order(lhs, rhs, options))
        case .beginsWith, .endsWith, .contains, .like, .matches:
            // A decimal is searched as its (canonical) text, as SQL searches it.
            guard let text = lhs?.stringValue ?? lhs?.decimalText, case .string(let pattern)? = rhs else { return false }
            let t = fold(text, options)
            let p = fold(pattern, options)
            switch op {
            case .beginsWith: return t.hasPrefix(p)
            case .endsWith: return t.hasSuffix(p)
            case .contains: return p.isEmpty || t.contains(p)
            case .like: return like(Array(t.unicodeScalars), Array(p.unicodeScalars))
            default:
                do {
                    let regex = try NSRegularExpression(pattern: "^(?:" + p + ")$", options: [.dotMatchesLineSeparators])
                    return regex.firstMatch(in: t, range: NSRange(t.startIndex..., in: t)) != nil
                } catch {
                    throw QueryPredicateError("MATCHES needs a regular expression; '\(pattern)' is not one", column: 0)
                }
            }
        case .in, .between:
            throw QueryPredicateError("\(op.rawValue) needs a list on its right", column: 0)
        }
    }

    static func equal(_ lhs: Value?, _ rhs: Value?, _ options: PredicateComparison.Options) -> Bool {
        switch (lhs, rhs) {
        case (nil, nil): return true
        case (nil, _), (_, nil): return false
        case (.string(let a)?, .string(let b)?): return fold(a, options) == fold(b, options)
        default: return order(lhs, rhs, options) == .orderedSame
        }
    }

    /// The order of two values of comparable kinds (numbers with numbers, strings with
    /// strings, …); nil when either is nil or they are of kinds that do not compare.
    static func order(_ lhs: Value?, _ rhs: Value?, _ options: PredicateComparison.Options) -> ComparisonResult? {
        func compare<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult {
            a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
        }
        switch (lhs, rhs) {
        // A decimal with a number (or decimal text) by number, exactly, as SQL compares them.
        case (.decimal(let a)?, let other?):
            return canonicalDecimal(other).map { ComparisonResult(DecimalText.compare(a, $0)) }
        // An integer or double on the left compares with a decimal's nearest double, as SQL
        // binds it for their columns (`9 < decimal` is turned round first: `evaluate`).
        case (.int?, .decimal(let b)?), (.double?, .decimal(let b)?):
            return Double(b).flatMap { order(lhs, .double($0), options) }
        case (.string(let a)?, .decimal(let b)?):
            return DecimalText.canonical(a).map { ComparisonResult(DecimalText.compare($0, b)) }
        case (.int(let a)?, .int(let b)?): return compare(a, b)
        case (.int(let a)?, .double(let b)?): return compare(Double(a), b)
        case (.double(let a)?, .int(let b)?): return compare(a, Double(b))
        case (.double(let a)?, .double(let b)?): return compare(a, b)
        case (.string(let a)?, .string(let b)?):
            // Binary order of the (folded) UTF-8, as SQLite compares text.
            let x = Array(fold(a, options).utf8)
            let y = Array(fold(b, options).utf8)
            return x == y ? .orderedSame : x.lexicographicallyPrecedes(y) ? .orderedAscending : .orderedDescending
        case (.date(let a)?, .date(let b)?): return compare(a, b)
        case (.date(let a)?, .string(let b)?):
            guard let date = isoDate(b) else { return nil }
            return compare(a, date)
        case (.string(let a)?, .date(let b)?):
            guard let date = isoDate(a) else { return nil }
            return compare(date, b)
        case (.bool(let a)?, .bool(let b)?): return compare(a ? 1 : 0, b ? 1 : 0)
        case (.uuid(let a)?, .uuid(let b)?): return compare(a.uuidString, b.uuidString)
        case (.binary(let a)?, .binary(let b)?):
            return a == b ? .orderedSame : a.lexicographicallyPrecedes(b) ? .orderedAscending : .orderedDescending
        default: return nil
        }
    }

    /// The canonical decimal a number, decimal or decimal text compared with a decimal
    /// stands for: integers exactly, doubles by their shortest digits (`0.1` is 0.1);
    /// nil for other values (and NaN, infinities, text that is no number).
    static func canonicalDecimal(_ value: Value) -> String? {
        switch value {
        case .decimal(let text), .string(let text): DecimalText.canonical(text)
        case .int(let number): DecimalText.canonical(number)
        case .double(let number): DecimalText.canonical(number)
        default: nil
        }
    }

    /// A comparison's right side with decimals made their nearest doubles, for anything but
    /// a decimal on its left: other attributes compare with a number literal past a double's
    /// precision (which the parser keeps a decimal) as with the double it was before.
    static func doublesFromDecimals(_ expression: PredicateExpression) -> PredicateExpression {
        func double(_ value: Value?) -> Value? {
            guard case .decimal(let text)? = value, DecimalText.canonical(text) != nil, let number = Double(text) else { return value }
            return .double(number)
        }
        switch expression {
        case .value(let value): return .value(double(value))
        case .list(let items): return .list(items.map(double))
        default: return expression
        }
    }

    /// A comparison's right side with numbers and decimal text made canonical decimals,
    /// for a decimal on its left (what cannot be one is left for the type check to refuse).
    static func decimalsFromNumbers(_ expression: PredicateExpression) -> PredicateExpression {
        func decimal(_ value: Value?) -> Value? { value.flatMap(canonicalDecimal).map(Value.decimal) ?? value }
        switch expression {
        case .value(let value): return .value(decimal(value))
        case .list(let items): return .list(items.map(decimal))
        default: return expression
        }
    }

    static func fold(_ text: String, _ options: PredicateComparison.Options) -> String {
        var fold: String.CompareOptions = []
        if options.contains(.caseInsensitive) { fold.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { fold.insert(.diacriticInsensitive) }
        return fold.isEmpty ? text : text.folding(options: fold, locale: nil)
    }

    /// LIKE: `*` any run of characters, `?` one character, `\` takes the next literally.
    static func like(_ text: [Unicode.Scalar], _ pattern: [Unicode.Scalar]) -> Bool {
        func match(_ t: Int, _ p: Int) -> Bool {
            if p == pattern.count { return t == text.count }
            switch pattern[p] {
            case "*":
                var k = t
                while true {
                    if match(k, p + 1) { return true }
                    if k == text.count { return false }
                    k += 1
                }
            case "?":
                return t < text.count && match(t + 1, p + 1)
            case "\\" where p + 1 < pattern.count:
                return t < text.count && text[t] == pattern[p + 1] && match(t + 1, p + 2)
            default:
                return t < text.count && text[t] == pattern[p] && match(t + 1, p + 1)
            }
        }
        return match(0, 0)
    }

    static func aggregate(_ function: AggregateFunction, _ values: [Value]) -> Value? {
        switch function {
        case .count: return .int(Int64(values.count))
        case .sum, .avg:
            var integer: Int64 = 0
            var real = 0.0
            var allIntegers = true
            for value in values {
                switch value {
                case .int(let i): integer &+= i; real += Double(i)
                case .double(let d): allIntegers = false; real += d
                default: continue
                }
            }
            if function == .sum { return allIntegers ? .int(integer) : .double(real) }
            return values.isEmpty ? nil : .double(real / Double(values.count))
        case .min: return values.min { order($0, $1, []) == .orderedAscending }
        case .max: return values.max { order($0, $1, []) == .orderedAscending }
        }
    }
}

extension PredicateComparison.Operator {
    /// Whether the operator searches text (BEGINSWITH, ENDSWITH, CONTAINS, LIKE, MATCHES).
    var searchesText: Bool {
        switch self {
        case .beginsWith, .endsWith, .contains, .like, .matches: true
        default: false
        }
    }

    /// The operator that says the same with its sides swapped (`<` for `>`), for the ones that have one.
    var mirrored: Self? {
        switch self {
        case .equal, .notEqual: self
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        default: nil
        }
    }
}

extension ComparisonResult {
    /// -1, 0 or 1 as an order.
    init(_ order: Int) {
        self = order < 0 ? .orderedAscending : order > 0 ? .orderedDescending : .orderedSame
    }
}

extension Value {
    /// A decimal's text, nil for other values.
    var decimalText: String? { if case .decimal(let text) = self { text } else { nil } }
}
