import Foundation
public import IngestJSON

/// What an attribute mapping does to a record's value before converting it: the small
/// transforms users otherwise write code for.
///
/// ```json
/// "source":  { "value": "github" }                                  // a constant
/// "state":   { "from": "s", "map": { "o": "open", "c": "closed" } } // a table (enums)
/// "kind":    { "from": "k", "map": { "a": "alpha" }, "otherwise": "other" } // and a fallback
/// "login":   { "from": "login", "trim": true, "case": "lower" }     // trim, case
/// "country": { "from": "cc", "default": "PT" }                      // a default when absent
/// ```
///
/// Order: trim, then case, then the table. A value the table does not name takes
/// `otherwise`, or rejects the record when there is none; a null or absent value is left
/// alone (the default, if any, applies).
public struct ValueTransform: Sendable, Equatable {
    public enum LetterCase: String, Sendable {
        case lower, upper
    }

    /// The value every record gets (the mapping has no `from`).
    public var constant: JSONValue?
    /// Feed value (as text) → stored value.
    public var table: [String: JSONValue]?
    /// What a value the table does not name becomes (else the record is rejected).
    public var otherwise: JSONValue?
    public var trim = false
    public var letterCase: LetterCase?

    public init() {}

    /// Whether the transform does anything to a value read from the record.
    public var isIdentity: Bool { constant == nil && table == nil && !trim && letterCase == nil }

    /// `value` transformed.
    /// - Throws: `CoercionError` for a value the table does not name.
    public func apply(_ value: JSONValue?) throws -> JSONValue? {
        guard !isIdentity, var value, value != .null else { return value }
        if trim || letterCase != nil, case .string(var text) = value {
            if trim { text = text.trimmingCharacters(in: .whitespacesAndNewlines) }
            switch letterCase {
            case .lower?: text = text.lowercased()
            case .upper?: text = text.uppercased()
            case nil: break
            }
            value = .string(text)
        }
        if let table {
            let text: String
            switch value {
            case .string(let s): text = s
            case .number(let n): text = n
            case .bool(let b): text = b ? "true" : "false"
            default:
                if let otherwise { return otherwise }
                throw CoercionError("\(value.kindDescription) is not one of the mapped values")
            }
            guard let mapped = table[text] ?? otherwise else {
                let names = table.keys.sorted().prefix(8).map { "'\($0)'" }.joined(separator: ", ")
                throw CoercionError("'\(text)' is not one of the mapped values (\(names)\(table.count > 8 ? ", …" : ""))")
            }
            value = mapped
        }
        return value
    }
}
