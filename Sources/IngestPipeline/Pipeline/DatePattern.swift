import Foundation
import IngestStore
import Synchronization

/// A date pattern (`DateFormat.pattern`) compiled once and read by hand: building a
/// `DateFormatter` per value made a log feed 26× slower than one without dates. The
/// fields logs and exports use are read here, in UTC unless the text gives an offset:
/// `yyyy`, `MM`/`M`, `MMM` (English abbreviations), `dd`/`d`, `HH`/`H`, `mm`,
/// `ss`, `S…` (fractions), `Z`/`ZZZZZ`/`X…`/`x…` (offsets: `+0200`, `+02:00`, `Z`),
/// literal characters and 'quoted text'. Any other field (day names, AM/PM, time zone
/// names) is read by a `DateFormatter` kept per pattern and thread.
final class DatePattern: Sendable {
    enum Field: Sendable, Equatable {
        case year(digits: Int)  // exactly four
        case month(digits: Int)  // 2: exactly two; 1: one or two
        case monthName
        case day(digits: Int)
        case hour(digits: Int)
        case minute
        case second
        case fraction
        case offset
        case literal([UInt8])
    }

    let pattern: String
    /// nil when the pattern has a field this parser does not read.
    let fields: [Field]?

    private static let cache = Mutex<[String: DatePattern]>([:])

    /// The compiled pattern (compiled once per process).
    static func compiled(_ pattern: String) -> DatePattern {
        if let known = cache.withLock({ $0[pattern] }) { return known }
        let made = DatePattern(pattern)
        cache.withLock { $0[pattern] = made }
        return made
    }

    init(_ pattern: String) {
        self.pattern = pattern
        fields = Self.compile(Array(pattern.utf8))
    }

    /// The date `text` gives, or nil when it does not match the pattern or names no real
    /// date (February 30th, hour 24).
    /// A text without an offset is a local time in `localZone` (UTC when nil).
    func date(from text: String, localZone: TimeZone? = nil) -> Date? {
        guard let fields else { return Self.formatter(pattern, zone: localZone).date(from: text) }
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBufferPointer { parse(UnsafeBufferPointer($0), fields, localZone: localZone) }
    }

    private func parse(_ text: UnsafeBufferPointer<UInt8>, _ fields: [Field], localZone: TimeZone?) -> Date? {
        var index = 0
        var year = 1970, month = 1, day = 1, hour = 0, minute = 0, second = 0
        var fraction = 0..<0
        var offset: Int?
        func digits(min: Int, max: Int) -> Int? {
            var value = 0, count = 0
            while count < max, index < text.count, text[index] >= 48, text[index] <= 57 {
                value = value * 10 + Int(text[index] - 48)
                index += 1
                count += 1
            }
            return count >= min ? value : nil
        }
        for field in fields {
            switch field {
            case .year(let width):
                guard let value = digits(min: width, max: width) else { return nil }
                year = value
            case .month(let width):
                guard let value = digits(min: width, max: 2) else { return nil }
                month = value
            case .monthName:
                guard index + 3 <= text.count else { return nil }
                let name = String(decoding: UnsafeBufferPointer(rebasing: text[index..<index + 3]), as: UTF8.self).lowercased()
                guard let number = Self.months.firstIndex(of: name) else { return nil }
                month = number + 1
                index += 3
            case .day(let width):
                guard let value = digits(min: width, max: 2) else { return nil }
                day = value
            case .hour(let width):
                guard let value = digits(min: width, max: 2) else { return nil }
                hour = value
            case .minute:
                guard let value = digits(min: 2, max: 2) else { return nil }
                minute = value
            case .second:
                guard let value = digits(min: 2, max: 2) else { return nil }
                second = value
            case .fraction:
                let start = index
                guard digits(min: 1, max: 9) != nil else { return nil }
                fraction = start..<index
            case .offset:
                guard index < text.count else { return nil }
                if text[index] == UInt8(ascii: "Z") {
                    index += 1
                    offset = 0
                    continue
                }
                let sign = text[index] == UInt8(ascii: "-") ? -1 : 1
                guard text[index] == UInt8(ascii: "+") || text[index] == UInt8(ascii: "-") else { return nil }
                index += 1
                guard let hours = digits(min: 2, max: 2) else { return nil }
                if index < text.count, text[index] == UInt8(ascii: ":") { index += 1 }
                let minutes = digits(min: 2, max: 2) ?? 0
                guard hours <= 23, minutes <= 59 else { return nil }
                offset = sign * (hours * 3600 + minutes * 60)
            case .literal(let bytes):
                for byte in bytes {
                    guard index < text.count, text[index] == byte else { return nil }
                    index += 1
                }
            }
        }
        guard index == text.count, (1...12).contains(month), day >= 1, day <= ISO8601.daysIn(month, year),
              hour <= 23, minute <= 59, second <= 59 else { return nil }
        let local = StoredDate.days(year: Int64(year), month: month, day: day) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
        let zoneOffset = Int64(offset ?? localZone.map { ISO8601.offset(of: $0, atLocal: local) } ?? 0)
        let seconds = StoredDate.seconds(local - zoneOffset - ISO8601.referenceSince1970, UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: text[fraction])))
        return Date(timeIntervalSinceReferenceDate: seconds)
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// The fields of a pattern, or nil when it has one this parser does not read.
    @_optimize(none)
    private static func compile(_ pattern: [UInt8]) -> [Field]? {
        var fields: [Field] = []
        var index = 0
        func literal(_ byte: UInt8) {
            if case .literal(let bytes)? = fields.last {
                fields[fields.count - 1] = .literal(bytes + [byte])
            } else {
                fields.append(.literal([byte]))
            }
        }
        while index < pattern.count {
            let letter = pattern[index]
            if letter == UInt8(ascii: "'") {
                index += 1
                if index < pattern.count, pattern[index] == UInt8(ascii: "'") {
                    literal(letter)
                    index += 1
                    continue
                }
                while index < pattern.count, pattern[index] != UInt8(ascii: "'") {
                    literal(pattern[index])
                    index += 1
                }
                guard index < pattern.count else { return nil }
                index += 1
                continue
            }
            let isLetter = (letter >= 65 && letter <= 90) || (letter >= 97 && letter <= 122)
            guard isLetter else {
                literal(letter)
                index += 1
                continue
            }
            var run = 0
            while index < pattern.count, pattern[index] == letter {
                run += 1
                index += 1
            }
            switch (Character(UnicodeScalar(letter)), run) {
            // Two-digit years are left to DateFormatter, whose century window moves with the clock.
            case ("y", 4), ("u", 4): fields.append(.year(digits: 4))
            case ("M", 1), ("M", 2): fields.append(.month(digits: run))
            case ("M", 3): fields.append(.monthName)
            case ("d", 1), ("d", 2): fields.append(.day(digits: run))
            case ("H", 1), ("H", 2): fields.append(.hour(digits: run))
            case ("m", 2): fields.append(.minute)
            case ("s", 2): fields.append(.second)
            case ("S", _): fields.append(.fraction)
            case ("Z", 1...5), ("X", 1...5), ("x", 1...5): fields.append(.offset)
            default: return nil
            }
        }
        return fields
    }

    /// A formatter for `pattern`, one per thread (a DateFormatter is not thread-safe).
    private static func formatter(_ pattern: String, zone: TimeZone?) -> DateFormatter {
        let key = "ingest.DatePattern." + (zone?.identifier ?? "UTC") + "." + pattern
        if let formatter = Thread.current.threadDictionary[key] as? DateFormatter { return formatter }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = zone ?? TimeZone(identifier: "UTC")
        formatter.dateFormat = pattern
        Thread.current.threadDictionary[key] = formatter
        return formatter
    }
}
