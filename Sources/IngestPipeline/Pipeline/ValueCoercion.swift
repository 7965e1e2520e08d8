public import Foundation
public import IngestJSON
public import IngestStore

/// Why a record's value cannot become an attribute's value. The message goes to the
/// rejects file as is.
public struct CoercionError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// How dates arrive in a feed.
public enum DateFormat: Sendable, Hashable, Codable {
    /// ISO 8601, with or without fractional seconds, `Z` or an offset.
    case iso8601
    /// Seconds since 1970 (a number or a numeric string).
    case unixSeconds
    /// Milliseconds since 1970.
    case unixMilliseconds
    /// A `DateFormatter` pattern, read in UTC with the POSIX locale: `"yyyy-MM-dd HH:mm"`.
    case pattern(String)
}

/// Turns JSON values into attribute values, converting where the JSON type differs
/// (the seeds' safeSetValuesForKeysWithDictionary, stricter): numbers ↔ strings,
/// "true"/"false"/"yes"/"no"/0/1 → bool, numeric strings → numbers, date strings and
/// epoch numbers → dates. What cannot convert exactly is an error saying why.
public enum ValueCoercion {
    /// The attribute value for `json` (nil when the record has none or it is null).
    /// - Throws: `CoercionError` with the reason.
    public static func value(_ json: JSONValue?, for type: AttributeType, dates: [DateFormat] = [.iso8601],
                             timeZone: TimeZone? = nil) throws -> Value? {
        guard let json, json != .null else { return nil }
        switch type {
        case .string:
            switch json {
            case .string(let s): return .string(s)
            case .number(let n): return .string(n)
            case .bool(let b): return .string(b ? "true" : "false")
            default: throw mismatch(json, "a string")
            }
        case .int16, .int32, .int64:
            let text: String
            switch json {
            case .number(let n): text = n
            case .string(let s): text = s.trimmingCharacters(in: .whitespacesAndNewlines)
            default: throw mismatch(json, "an integer")
            }
            let integer: Int64
            switch readInteger(text) {
            case .integer(let value): integer = value
            case .outOfRange: throw CoercionError("\(text) is out of range for \(type.rawValue)")
            case .notAnInteger:
                if case .string = json { throw CoercionError("\"\(text)\" is not an integer") }
                throw CoercionError("\(text) is not an integer")
            }
            let fits = switch type {
            case .int16: Int16(exactly: integer) != nil
            case .int32: Int32(exactly: integer) != nil
            default: true
            }
            guard fits else { throw CoercionError("\(text) is out of range for \(type.rawValue)") }
            return .int(integer)
        case .double:
            let text: String
            switch json {
            case .number(let n): text = n
            case .string(let s): text = s.trimmingCharacters(in: .whitespacesAndNewlines)
            default: throw mismatch(json, "a number")
            }
            // A decimal as JSON writes one: not Swift's other forms (hex, hex floats, "nan", "inf").
            guard isDecimalText(text), let double = Double(text) else { throw CoercionError("\"\(text)\" is not a number") }
            guard double.isFinite else { throw CoercionError("\(text) is out of range for double") }
            return .double(double)
        case .bool:
            switch json {
            case .bool(let b): return .bool(b)
            case .number("0"): return .bool(false)
            case .number("1"): return .bool(true)
            case .string(let s):
                switch s.trimmingCharacters(in: .whitespacesAndNewlines).lowercased() {
                case "true", "yes", "1": return .bool(true)
                case "false", "no", "0": return .bool(false)
                default: throw CoercionError("\"\(s)\" is not a boolean (true/false, yes/no, 1/0)")
                }
            case .number(let n): throw CoercionError("\(n) is not a boolean (only 0 and 1 are)")
            default: throw mismatch(json, "a boolean")
            }
        case .date:
            return .date(try date(json, formats: dates, timeZone: timeZone))
        case .uuid:
            guard case .string(let s) = json else { throw mismatch(json, "a UUID string") }
            guard let uuid = UUID(uuidString: s) else { throw CoercionError("\"\(s)\" is not a UUID") }
            return .uuid(uuid)
        case .binary:
            guard case .string(let s) = json else { throw mismatch(json, "base64 text") }
            guard let data = Data(base64Encoded: s) else { throw CoercionError("\"\(s.prefix(40))\" is not base64") }
            return .binary(Array(data))
        case .decimal:
            let text: String
            switch json {
            case .number(let n): text = n
            case .string(let s): text = s.trimmingCharacters(in: .whitespacesAndNewlines)
            default: throw mismatch(json, "a decimal number")
            }
            // Exact at any precision (no Decimal or double in between), in its canonical form.
            guard isDecimalText(text) else { throw CoercionError("\"\(text)\" is not a decimal number") }
            guard let canonical = DecimalText.canonical(text) else {
                let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
                throw CoercionError("\(shown) is out of range for decimal (at most \(DecimalText.maximumIntegerDigits) digits before the point and \(DecimalText.maximumFractionDigits) after)")
            }
            return .decimal(canonical)
        }
    }

    /// `[+-]digits[.digits][(e|E)[+-]digits]`, or `.digits` after the sign: a decimal's text.
    static func isDecimalText(_ text: String) -> Bool {
        var bytes = Substring(text).utf8[...]
        func digits() -> Int {
            let count = bytes.prefix { $0 >= 48 && $0 <= 57 }.count
            bytes = bytes.dropFirst(count)
            return count
        }
        if bytes.first == 43 || bytes.first == 45 { bytes = bytes.dropFirst() }
        var mantissa = digits()
        if bytes.first == 46 {
            bytes = bytes.dropFirst()
            mantissa += digits()
        }
        guard mantissa > 0 else { return false }
        if bytes.first == 101 || bytes.first == 69 {
            bytes = bytes.dropFirst()
            if bytes.first == 43 || bytes.first == 45 { bytes = bytes.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return bytes.isEmpty
    }

    /// What decimal text is as an integer.
    enum IntegerReading: Equatable {
        case integer(Int64)
        /// A whole number past Int64's range.
        case outOfRange
        /// A fraction, or not a decimal as JSON writes one ("0x10", "nan").
        case notAnInteger
    }

    /// Decimal text ("42", "1e3", "10.0", "-9.2233720368547758e18") as an integer, worked out
    /// from its digits: no double in between, which rounded 9007199254740993.0 to …992 and
    /// -9223372036854775809 to Int64.min (found by probing), and took 1e-400 for 0.
    static func readInteger(_ text: String) -> IntegerReading {
        guard isDecimalText(text) else { return .notAnInteger }
        var bytes = Substring(text).utf8[...]
        let negative = bytes.first == UInt8(ascii: "-")
        if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
        func isDigit(_ byte: UInt8?) -> Bool { byte.map { $0 >= 48 && $0 <= 57 } ?? false }
        var digits: [UInt8] = []
        var exponent = 0
        while isDigit(bytes.first) { digits.append(bytes.removeFirst() - 48) }
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            while isDigit(bytes.first) { digits.append(bytes.removeFirst() - 48); exponent -= 1 }
        }
        if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            let negativeExponent = bytes.first == UInt8(ascii: "-")
            if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
            var written = 0
            // Saturated: any exponent past a billion is as good as infinite here.
            while isDigit(bytes.first) { written = min(written * 10 + Int(bytes.removeFirst() - 48), 1_000_000_000) }
            exponent += negativeExponent ? -written : written
        }
        guard let first = digits.firstIndex(where: { $0 != 0 }) else { return .integer(0) }
        var significant = digits[first...]
        while significant.last == 0 {
            significant = significant.dropLast()
            exponent += 1
        }
        if exponent < 0 { return .notAnInteger }
        if significant.count + exponent > 19 { return .outOfRange }
        // At most 19 digits: within UInt64.
        var magnitude: UInt64 = significant.reduce(0) { $0 * 10 + UInt64($1) }
        for _ in 0..<exponent {
            let (product, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            if overflow { return .outOfRange }
            magnitude = product
        }
        if negative {
            if magnitude == UInt64(Int64.max) + 1 { return .integer(Int64.min) }
            return magnitude <= UInt64(Int64.max) ? .integer(-Int64(magnitude)) : .outOfRange
        }
        return magnitude <= UInt64(Int64.max) ? .integer(Int64(magnitude)) : .outOfRange
    }

    /// The date `json` gives in the first of `formats` that reads it; local times
    /// (no offset in the text) are in `timeZone`, UTC when nil.
    /// - Throws: `CoercionError` when no format reads it, or the date is outside the
    ///   dates a store holds (`StoredDate`).
    static func date(_ json: JSONValue, formats: [DateFormat], timeZone: TimeZone? = nil) throws -> Date {
        for format in formats {
            var found: Date?
            switch (format, json) {
            case (.iso8601, .string(let s)):
                found = ISO8601.date(s, localZone: timeZone)
            case (.unixSeconds, .number(let n)), (.unixSeconds, .string(let n)):
                found = ISO8601.referenceSeconds(unixText: n.trimmingCharacters(in: .whitespaces), scale: 0).map(Date.init(timeIntervalSinceReferenceDate:))
            case (.unixMilliseconds, .number(let n)), (.unixMilliseconds, .string(let n)):
                found = ISO8601.referenceSeconds(unixText: n.trimmingCharacters(in: .whitespaces), scale: 3).map(Date.init(timeIntervalSinceReferenceDate:))
            case (.pattern(let pattern), .string(let s)):
                found = DatePattern.compiled(pattern).date(from: s, localZone: timeZone)
            default:
                continue
            }
            guard let found else { continue }
            guard StoredDate.contains(found) else {
                let text = if case .string(let s) = json { "\"\(s)\"" } else { json.description }
                throw CoercionError("\(text) is outside the dates a store holds (\(StoredDate.rangeDescription))")
            }
            return found
        }
        let expected = formats.map { format -> String in
            switch format {
            case .iso8601: "ISO 8601"
            case .unixSeconds: "Unix seconds"
            case .unixMilliseconds: "Unix milliseconds"
            case .pattern(let p): "'\(p)'"
            }
        }.joined(separator: " or ")
        switch json {
        case .string(let s): throw CoercionError("\"\(s)\" is not a date (expected \(expected))")
        case .number(let n): throw CoercionError("\(n) is not a date (expected \(expected))")
        default: throw mismatch(json, "a date")
        }
    }

    /// ISO 8601 as feeds write it (see `ISO8601` for the forms), local times in UTC.
    static func iso8601(_ text: String) -> Date? { ISO8601.date(text) }

    private static func mismatch(_ json: JSONValue, _ expected: String) -> CoercionError {
        CoercionError("expected \(expected), found \(json.kindDescription)")
    }
}

extension JSONValue {
    /// "a string", "an array", … for messages.
    var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
