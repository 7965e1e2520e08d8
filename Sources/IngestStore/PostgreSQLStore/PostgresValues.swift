import Foundation

/// Values in PostgreSQL's text form, both ways, for the column types of
/// `AttributeType.postgresType`. Connections run with `TimeZone = UTC` and
/// `DateStyle = ISO` (`PostgresPool`), so timestamps read back in one shape.
enum PostgresValues {
    /// The double PostgreSQL stores for `number`: negative zero as zero. SQLite keeps a
    /// REAL without a fraction as an integer, so its zero has no sign; every backend must
    /// read back what one SQLite worker stores.
    @inline(__always)
    static func stored(_ number: Double) -> Double { number == 0 ? 0 : number }

    /// The text a parameter of this value is sent as, and the type it is cast to.
    static func format(_ value: Value) -> (text: String, type: String) {
        switch value {
        case .string(let text): (text, "text")
        case .decimal(let text): (text, "numeric")
        case .int(let number): (String(number), "bigint")
        case .double(let number): (number.isNaN ? "NaN" : number.isInfinite ? (number < 0 ? "-Infinity" : "Infinity") : "\(stored(number))", "double precision")
        case .bool(let flag): (flag ? "t" : "f", "boolean")
        case .date(let date): (timestamp(date), "timestamptz")
        case .binary(let bytes): ("\\x" + lowercaseHex(bytes), "bytea")
        case .uuid(let uuid): (uuid.uuidString, "text")
        }
    }

    /// Why PostgreSQL cannot hold `value`, or nil: text with U+0000, or a date outside
    /// the dates any store holds (`StoredDate`, well inside PostgreSQL's timestamps).
    static func problem(_ value: Value) -> String? {
        switch value {
        case .string(let text):
            return text.utf8.contains(0) ? "PostgreSQL text cannot hold U+0000 (NUL)" : nil
        case .date(let date):
            return StoredDate.problem(date)
        default:
            return nil
        }
    }

    /// A value of `type` from its text form; nil when the text is not one.
    static func parse(_ text: String, as type: AttributeType) -> Value? {
        switch type {
        case .string: .string(text)
        // As `numeric` prints it: canonical when it came in so (a column another
        // program wrote may keep a scale: `7.80` is `7.8`).
        case .decimal: .decimal(DecimalText.canonical(text) ?? text)
        case .int16, .int32, .int64: Int64(text).map(Value.int) ?? Double(text).flatMap { Int64(exactly: $0.rounded()) }.map(Value.int)
        case .double: Double(text).map(Value.double)
        // Booleans, or integers where an aggregate counted them.
        case .bool: .bool(text == "t" || text == "true" || (Int64(text).map { $0 != 0 } ?? false))
        case .date: date(text).map(Value.date)
        case .binary: bytes(text).map(Value.binary)
        case .uuid: UUID(uuidString: text).map(Value.uuid)
        }
    }

    /// A computed column's value by its result type: integers, doubles (also `numeric`,
    /// as sums and averages of integers come back), booleans; text otherwise.
    static func parseUntyped(_ text: String, oid: UInt32) -> Value? {
        switch oid {
        case 20, 21, 23: Int64(text).map(Value.int)
        case 700, 701: Double(text).map(Value.double)
        case 1700: Int64(text).map(Value.int) ?? Double(text).map(Value.double)
        case 16: .bool(text == "t")
        default: .string(text)
        }
    }

    /// `2024-10-27 12:34:56.123456+00`: UTC, to the microsecond (PostgreSQL's precision).
    static func timestamp(_ date: Date) -> String {
        // Beyond PostgreSQL's range (saves refuse these first: `problem(_:)`), a predicate's
        // date still compares sensibly, and nothing traps converting it.
        let interval = date.timeIntervalSince1970
        if interval.isNaN { return "NaN" }
        if interval <= -210_866_803_200 { return "-infinity" }
        if interval >= 9_224_318_016_000 { return "infinity" }
        let micros = (interval * 1_000_000).rounded()
        var seconds = Int(floor(micros / 1_000_000))
        var fraction = Int(micros - Double(seconds) * 1_000_000)
        if fraction >= 1_000_000 { seconds += 1; fraction -= 1_000_000 }
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let year = Int(parts.tm_year) + 1900
        let yearText = year < 1 ? "\(1 - year)" : String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
        let micro = String(fraction)
        return "\(yearText)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))."
            + String(repeating: "0", count: 6 - micro.count) + micro + "+00" + (year < 1 ? " BC" : "")
    }

    /// A `timestamptz` in ISO style at UTC (`2024-10-27 12:34:56.5+00`).
    static func date(_ text: String) -> Date? {
        let utf8 = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= utf8.count else { return nil }
            var value = 0
            for byte in utf8[range] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard let dash = utf8.firstIndex(of: UInt8(ascii: "-")), dash >= 4,
              let year = number(0..<dash), let month = number(dash + 1..<dash + 3), let day = number(dash + 4..<dash + 6),
              let hour = number(dash + 7..<dash + 9), let minute = number(dash + 10..<dash + 12),
              let second = number(dash + 13..<dash + 15) else { return nil }
        var position = dash + 15
        var fraction = position..<position
        if position < utf8.count, utf8[position] == UInt8(ascii: ".") {
            position += 1
            let start = position
            while position < utf8.count, utf8[position] >= 48 && utf8[position] <= 57 { position += 1 }
            fraction = start..<position
        }
        guard (1...12).contains(month), day >= 1, day <= 31, hour < 24, minute < 60, second < 61 else { return nil }
        let days = StoredDate.days(year: Int64(text.hasSuffix(" BC") ? 1 - year : year), month: month, day: day)
        // Rounded once, as the importer rounds the same text: a date reads back as it was written.
        let whole = days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - 978_307_200
        return utf8[fraction].withUnsafeBytes { Date(timeIntervalSinceReferenceDate: StoredDate.seconds(whole, $0)) }
    }

    /// A `bytea` in hex form (`\x00ff`).
    static func bytes(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: nil
            }
        }
        var result: [UInt8] = []
        result.reserveCapacity(utf8.count / 2 - 1)
        var index = 2
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            result.append(high << 4 | low)
            index += 2
        }
        return result
    }
}
