import Foundation
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
    public static func value(_ json: JSONValue?, for type: AttributeType, dates: [DateFormat] = [.iso8601]) throws -> Value? {
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
            case .string(let s): text = s.trimmingCharacters(in: .whitespaces)
            default: throw mismatch(json, "an integer")
            }
            guard let integer = integer(text) else {
                if let double = Double(text), double.isFinite, double.rounded() == double {
                    throw CoercionError("\(text) is out of range for \(type.rawValue)")
                }
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
            case .string(let s): text = s.trimmingCharacters(in: .whitespaces)
            default: throw mismatch(json, "a number")
            }
            guard let double = Double(text) else { throw CoercionError("\"\(text)\" is not a number") }
            guard double.isFinite else { throw CoercionError("\(text) is out of range for double") }
            return .double(double)
        case .bool:
            switch json {
            case .bool(let b): return .bool(b)
            case .number("0"): return .bool(false)
            case .number("1"): return .bool(true)
            case .string(let s):
                switch s.trimmingCharacters(in: .whitespaces).lowercased() {
                case "true", "yes", "1": return .bool(true)
                case "false", "no", "0": return .bool(false)
                default: throw CoercionError("\"\(s)\" is not a boolean (true/false, yes/no, 1/0)")
                }
            case .number(let n): throw CoercionError("\(n) is not a boolean (only 0 and 1 are)")
            default: throw mismatch(json, "a boolean")
            }
        case .date:
            return .date(try date(json, formats: dates))
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
            case .string(let s): text = s.trimmingCharacters(in: .whitespaces)
            default: throw mismatch(json, "a decimal number")
            }
            guard Decimal(string: text) != nil, text.allSatisfy({ $0.isNumber || "+-.eE".contains($0) }) else {
                throw CoercionError("\"\(text)\" is not a decimal number")
            }
            return .decimal(text)
        }
    }

    /// An Int64 from integer text, or from a number that is whole and in range ("1e3", "10.0").
    static func integer(_ text: String) -> Int64? {
        if let exact = Int64(text) { return exact }
        guard let double = Double(text), double.rounded() == double, abs(double) < 9.2e18 else { return nil }
        return Int64(double)
    }

    static func date(_ json: JSONValue, formats: [DateFormat]) throws -> Date {
        for format in formats {
            switch (format, json) {
            case (.iso8601, .string(let s)):
                if let date = iso8601(s) { return date }
            case (.unixSeconds, .number(let n)), (.unixSeconds, .string(let n)):
                if let seconds = Double(n), seconds.isFinite { return Date(timeIntervalSince1970: seconds) }
            case (.unixMilliseconds, .number(let n)), (.unixMilliseconds, .string(let n)):
                if let millis = Double(n), millis.isFinite { return Date(timeIntervalSince1970: millis / 1000) }
            case (.pattern(let pattern), .string(let s)):
                if let date = DatePattern.compiled(pattern).date(from: s) { return date }
            default:
                continue
            }
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

    /// ISO 8601 as feeds write it: `2024-03-05T12:34:56Z`, `…56.123Z`, `…56+02:00`, `…56.123456+0200`.
    /// The common shapes are read by hand (Foundation's parser costs about twenty times
    /// as much, and every record has a date); anything else goes to Foundation.
    static func iso8601(_ text: String) -> Date? {
        if let date = fastISO8601(text) { return date }
        return foundationISO8601(text)
    }

    /// `YYYY-MM-DDTHH:MM:SS`, optional `.fraction`, then `Z` or `±HH:MM` / `±HHMM`; nil for
    /// anything else (including out-of-range fields), which the caller hands to Foundation.
    static func fastISO8601(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { fastISO8601(UnsafeRawBufferPointer($0)) }
    }

    /// `fastISO8601` on UTF-8 bytes.
    static func fastISO8601(_ bytes: UnsafeRawBufferPointer) -> Date? {
        func digits(_ at: Int, _ count: Int) -> Int? {
            guard at + count <= bytes.count else { return nil }
            var value = 0
            for i in at..<(at + count) {
                let d = Int(bytes[i]) - 48
                guard d >= 0 && d <= 9 else { return nil }
                value = value * 10 + d
            }
            return value
        }
        guard bytes.count >= 20, bytes[4] == 45, bytes[7] == 45, bytes[10] == 84,
              bytes[13] == 58, bytes[16] == 58,
              let year = digits(0, 4), let month = digits(5, 2), let day = digits(8, 2),
              let hour = digits(11, 2), let minute = digits(14, 2), let second = digits(17, 2),
              (1...12).contains(month), day >= 1, day <= daysIn(month, year), hour < 24, minute < 60, second < 60 else { return nil }
        var i = 19
        var fraction = 0.0
        if bytes[i] == 46 {
            var scale = 0.1
            i += 1
            let start = i
            while i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 {
                fraction += Double(bytes[i] - 48) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        guard i < bytes.count else { return nil }
        var offset = 0
        switch bytes[i] {
        case 90:  // Z
            i += 1
        case 43, 45:  // + -
            let sign = bytes[i] == 45 ? -1 : 1
            guard let h = digits(i + 1, 2) else { return nil }
            var m: Int?
            if i + 3 < bytes.count && bytes[i + 3] == 58 { m = digits(i + 4, 2); i += 6 } else { m = digits(i + 3, 2); i += 5 }
            guard let m, h < 24, m < 60 else { return nil }
            offset = sign * (h * 3600 + m * 60)
        default:
            return nil
        }
        guard i == bytes.count else { return nil }
        let days = daysSinceEpoch(year, month, day)
        let seconds = Double(days * 86_400 + hour * 3600 + minute * 60 + second - offset) + fraction
        return Date(timeIntervalSince1970: seconds)
    }

    static func daysIn(_ month: Int, _ year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysSinceEpoch(_ year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func foundationISO8601(_ text: String) -> Date? {
        let styles: [Date.ISO8601FormatStyle] = [
            .iso8601,
            Date.ISO8601FormatStyle(includingFractionalSeconds: true),
        ]
        for style in styles {
            if let date = try? style.parse(text) { return date }
        }
        return nil
    }

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
