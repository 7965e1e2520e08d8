public import Foundation

/// The one place that says which instants a store holds and how they are written out.
///
/// A date attribute holds an instant from 0001-01-01T00:00:00Z up to, not including,
/// 10000-01-01T00:00:00Z: the years ISO 8601 writes with four digits, inside both
/// SQLite's and PostgreSQL's ranges. The importer rejects a value outside it with
/// `problem(_:)`'s reason, and saves refuse one on either backend, so no store Ingest
/// writes holds one; `iso8601(_:)` still prints any double (older stores, hand-made
/// files) without trapping.
public enum StoredDate {
    /// 0001-01-01T00:00:00Z, in seconds since 1970.
    public static let earliestSince1970: Double = -62_135_596_800
    /// 10000-01-01T00:00:00Z, in seconds since 1970: the first instant past the range.
    public static let endSince1970: Double = 253_402_300_800
    /// What messages call the range.
    public static let rangeDescription = "0001-01-01 to 9999-12-31 UTC"

    /// Whether a store holds `date`.
    public static func contains(_ date: Date) -> Bool {
        let seconds = date.timeIntervalSince1970
        return seconds >= earliestSince1970 && seconds < endSince1970
    }

    /// Why a store cannot hold `date`, or nil when it can.
    public static func problem(_ date: Date) -> String? {
        contains(date) ? nil : "\(iso8601(date)) is outside the dates a store holds (\(rangeDescription))"
    }

    /// `date` in ISO 8601 at UTC in the proleptic Gregorian calendar (as ISO 8601 counts
    /// years before 1582 too), rounded to the microsecond, with three fraction digits, or
    /// six when the microseconds are not zero: `2024-03-05T12:34:56.123Z`. Years past
    /// 9999 get a sign (`+10000-…`, ISO 8601's expanded form); an instant further out than
    /// 146 million years is written as its seconds since 1970.
    public static func iso8601(_ date: Date) -> String {
        let reference = date.timeIntervalSinceReferenceDate
        // About ±146 million years: nothing below overflows.
        guard reference.isFinite, abs(reference) < 4.6e15 else {
            return reference.isNaN ? "NaN" : "\(date.timeIntervalSince1970) s since 1970-01-01T00:00:00Z"
        }
        var whole = reference.rounded(.down)
        var fraction = Int64(((reference - whole) * 1_000_000).rounded())
        if fraction == 1_000_000 {
            whole += 1
            fraction = 0
        }
        let seconds = Int64(whole) + 978_307_200
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let (year, month, day) = civil(days: days)
        var text = yearText(year)
        text += "-" + padded(month, 2) + "-" + padded(day, 2)
        text += "T" + padded(Int(secondOfDay / 3600), 2) + ":" + padded(Int(secondOfDay / 60 % 60), 2) + ":" + padded(Int(secondOfDay % 60), 2)
        text += fraction % 1000 == 0 ? "." + padded(Int(fraction / 1000), 3) : "." + padded(Int(fraction), 6)
        return text + "Z"
    }

    /// `whole + 0.fraction` (fraction: decimal digits) as the nearest double. The sum is
    /// never rounded twice: small ones are one exact integer divided by an exact power
    /// of ten (which IEEE rounds once), the rest go through strtod's correct rounding.
    public static func seconds(_ whole: Int64, _ fraction: UnsafeRawBufferPointer) -> Double {
        var digits = fraction.count
        while digits > 0, fraction[digits - 1] == 48 { digits -= 1 }
        guard digits > 0 else { return Double(whole) }
        if digits <= 9 {
            var value: Int64 = 0
            for k in 0..<digits { value = value * 10 + Int64(fraction[k] - 48) }
            let (scaled, overflow) = whole.multipliedReportingOverflow(by: decimalPowers[digits])
            if !overflow, abs(scaled) < (1 << 53) - 1_000_000_000 {
                return Double(scaled + value) / Double(decimalPowers[digits])
            }
        }
        var text: [UInt8]
        if whole >= 0 {
            text = Array(String(whole).utf8) + [46] + Array(fraction[0..<digits])
        } else {
            // whole + 0.F = -((|whole| - 1) + 0.C), C = 10^digits - F.
            var complement = Array(fraction[0..<digits])
            var borrow = 0
            for k in stride(from: digits - 1, through: 0, by: -1) {
                var d = -Int(complement[k] - 48) - borrow
                if d < 0 { d += 10; borrow = 1 } else { borrow = 0 }
                complement[k] = UInt8(48 + d)
            }
            text = [45] + Array(String(-(whole + 1)).utf8) + [46] + complement
        }
        return text.withUnsafeBufferPointer { buffer in
            Double(String(decoding: buffer, as: UTF8.self)) ?? Double(whole)
        }
    }

    private static let decimalPowers: [Int64] = (0...18).map { power in (0..<power).reduce(Int64(1)) { value, _ in value * 10 } }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    public static func days(year: Int64, month: Int, day: Int) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = Int64((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1)
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date `days` after 1970-01-01 (Hinnant's `civil_from_days`).
    public static func civil(days: Int64) -> (year: Int64, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func yearText(_ year: Int64) -> String {
        if year >= 0 && year <= 9999 { return padded(Int(year), 4) }
        let digits = String(year.magnitude)
        return (year < 0 ? "-" : "+") + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private static func padded(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    private static func floorDivide(_ value: Int64, _ by: Int64) -> (Int64, Int64) {
        let quotient = value >= 0 ? value / by : (value - (by - 1)) / by
        return (quotient, value - quotient * by)
    }
}
