import Foundation

/// An attribute's value rules, as Xcode's model editor sets them ("Validation"): a
/// minimum and maximum value (numbers, dates, decimals), a minimum and maximum length
/// (strings, in characters; binary data, in bytes), and a regular expression a string
/// must match whole. A save checks every set value of an inserted or changed object
/// against them (`StoreError.validation`), and so does the import's batch path, which
/// sends the record to the rejects file.
public struct AttributeRules: Sendable, Hashable {
    /// The least value allowed, of the attribute's type.
    public var minimum: Value?
    /// The greatest value allowed, of the attribute's type.
    public var maximum: Value?
    public var minimumLength: Int?
    public var maximumLength: Int?
    /// An ICU regular expression (`NSRegularExpression`, as Core Data's) the whole string must match.
    public var pattern: String?

    public init(minimum: Value? = nil, maximum: Value? = nil, minimumLength: Int? = nil, maximumLength: Int? = nil,
                pattern: String? = nil) {
        self.minimum = minimum
        self.maximum = maximum
        self.minimumLength = minimumLength
        self.maximumLength = maximumLength
        self.pattern = pattern
    }

    /// Whether no rule is set.
    public var isEmpty: Bool { self == AttributeRules() }

    // MARK: - Model JSON

    /// A bound as a person writes it in model JSON: a plain number (seconds since 2001 for a
    /// date), or a decimal as a string or number; nil when the field is missing.
    static func decodeBound<K: CodingKey>(_ c: KeyedDecodingContainer<K>, _ key: K, _ type: AttributeType) throws -> Value? {
        guard c.contains(key) else { return nil }
        switch type {
        case .int16, .int32, .int64: return .int(try c.decode(Int64.self, forKey: key))
        case .double: return .double(try c.decode(Double.self, forKey: key))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: try c.decode(Double.self, forKey: key)))
        case .decimal:
            let text = try (try? c.decode(String.self, forKey: key)) ?? String(describing: c.decode(Double.self, forKey: key))
            guard let canonical = DecimalText.canonical(text) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "'\(text)' is not a decimal")
            }
            return .decimal(canonical)
        case .string, .bool, .binary, .uuid:
            throw DecodingError.dataCorruptedError(forKey: key, in: c,
                debugDescription: "a \(type.rawValue) attribute has no minimum or maximum value (strings and binary data take minLength and maxLength)")
        }
    }

    static func encodeBound<K: CodingKey>(_ value: Value?, _ c: inout KeyedEncodingContainer<K>, _ key: K) throws {
        switch value {
        case nil: break
        case .int(let number)?: try c.encode(number, forKey: key)
        case .double(let number)?: try c.encode(number, forKey: key)
        case .date(let date)?: try c.encode(date.timeIntervalSinceReferenceDate, forKey: key)
        case .decimal(let text)?: try c.encode(text, forKey: key)
        case let other?: try c.encode(other.description, forKey: key)
        }
    }

    /// Why these rules do not fit an attribute of `type`, or nil (`ModelValidation`).
    func problem(for type: AttributeType) -> String? {
        for bound in [minimum, maximum].compactMap({ $0 }) where !(type.accepts(bound) && type.isOrdered) {
            return "\(bound) is not a \(type.rawValue) bound (minimum and maximum apply to numbers, dates and decimals)"
        }
        if minimumLength != nil || maximumLength != nil, type != .string && type != .binary {
            return "minimum and maximum lengths apply to strings and binary data, not to a \(type.rawValue)"
        }
        if let length = [minimumLength, maximumLength].compactMap({ $0 }).first(where: { $0 < 0 }) {
            return "a length cannot be negative (\(length))"
        }
        if let pattern {
            guard type == .string else { return "a regular expression applies to strings, not to a \(type.rawValue)" }
            do { _ = try NSRegularExpression(pattern: pattern) } catch { return "the regular expression \(pattern) is not valid" }
        }
        return nil
    }
}

extension AttributeType {
    /// Whether values of the type have an order that minimum and maximum rules can use.
    var isOrdered: Bool {
        switch self {
        case .int16, .int32, .int64, .double, .date, .decimal: true
        case .string, .bool, .binary, .uuid: false
        }
    }
}

/// One attribute's rules made ready for checking values: the regular expression compiled
/// once, not per value.
struct AttributeCheck: @unchecked Sendable {
    // @unchecked: NSRegularExpression is immutable and documented safe to share across threads.
    let rules: AttributeRules
    private let regex: NSRegularExpression?

    /// Nil when the rules are empty: most attributes have none, and their values pay nothing.
    init?(_ rules: AttributeRules) {
        guard !rules.isEmpty else { return nil }
        self.rules = rules
        // Anchored at both ends, as predicates' MATCHES is: the whole string must match.
        regex = rules.pattern.flatMap { try? NSRegularExpression(pattern: "^(?:" + $0 + ")$", options: [.dotMatchesLineSeparators]) }
    }

    /// The first rule `value` breaks (bounds, then lengths, then the pattern) and the message that says so (`is 45 characters long, more
    /// than the maximum length 40`), or nil. Messages leave the value out: it may be long,
    /// or private; the rule's bound is in them.
    func problem(_ value: Value) -> (rule: ValidationProblem.Rule, message: String)? {
        if let minimum = rules.minimum, ValueComparison.order(value, minimum, []) == .orderedAscending {
            return (.minimum, "is less than the minimum \(minimum)")
        }
        if let maximum = rules.maximum, ValueComparison.order(value, maximum, []) == .orderedDescending {
            return (.maximum, "is more than the maximum \(maximum)")
        }
        let length: (count: Int, unit: String)? = switch value {
        case .string(let text): (text.count, text.count == 1 ? "character" : "characters")
        case .binary(let bytes): (bytes.count, bytes.count == 1 ? "byte" : "bytes")
        default: nil
        }
        if let length {
            if let minimum = rules.minimumLength, length.count < minimum {
                return (.minimumLength, "is \(length.count) \(length.unit) long, less than the minimum length \(minimum)")
            }
            if let maximum = rules.maximumLength, length.count > maximum {
                return (.maximumLength, "is \(length.count) \(length.unit) long, more than the maximum length \(maximum)")
            }
        }
        if let regex, case .string(let text) = value {
            if regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) == nil {
                return (.pattern, "does not match the pattern \(rules.pattern!)")
            }
        }
        return nil
    }
}
