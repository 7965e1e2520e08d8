import Foundation
import IngestStore

/// Number formats for people: 1,000,000 records, 1.52 s, 243.5 MiB/s.
enum Format {
    /// "1 record", "2 records", "1,000,000 records".
    static func records(_ value: Int) -> String { count(value) + (value == 1 ? " record" : " records") }

    static func count(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (i, digit) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out += "," }
            out.append(digit)
        }
        return value < 0 ? "-" + out : out
    }

    static func seconds(_ value: Double) -> String {
        value < 10 ? fixed(value, places: 2) + " s" : fixed(value, places: 1) + " s"
    }

    static func rate(_ value: Double) -> String { fixed(value, places: 1) }

    static func fixed(_ value: Double, places: Int) -> String {
        guard value.isFinite else { return "-" }
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = Int((abs(value) * scale).rounded())
        let whole = scaled / Int(scale)
        let sign = value < 0 && scaled > 0 ? "-" : ""
        guard places > 0 else { return sign + count(whole) }
        let fraction = String(scaled % Int(scale))
        return sign + count(whole) + "." + String(repeating: "0", count: places - fraction.count) + fraction
    }

    /// A stored date as ISO 8601 in UTC (see `StoredDate.iso8601`): rounded to the
    /// microsecond, not cut (a date read as 1517966773840 ms is stored as a double a hair
    /// below .840), proleptic Gregorian before 1582, and never a trap, whatever the double.
    static func date(_ date: Date) -> String { StoredDate.iso8601(date) }
}
