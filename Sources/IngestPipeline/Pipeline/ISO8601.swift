import Foundation
import IngestStore

/// ISO 8601 instants as feeds write them, read by hand (Foundation's parser costs about
/// twenty times as much, and every record has a date), to the nearest double: every
/// spelling of one instant gives the same value, on both write paths.
///
/// Read: `2024-03-05`, `2024-03-05T12:34`, `2024-03-05T12:34:56`, with `.fraction` or
/// `,fraction` of any length, then `Z`, `z`, `±HH:MM`, `±HHMM`, `±HH` or nothing; the
/// basic forms `20240305`, `20240305T123456Z`; `t` or a space for `T`. A time without a
/// zone is a local time: UTC unless the mapping names a `timeZone`.
enum ISO8601 {
    /// Seconds since 1970 at 2001-01-01T00:00:00Z, the store's reference date.
    static let referenceSince1970: Int64 = 978_307_200

    /// The instant `bytes` writes, or nil when they are not ISO 8601 or name no real
    /// date or time (February 30th, hour 24, second 60).
    static func date(_ bytes: UnsafeRawBufferPointer, localZone: TimeZone? = nil) -> Date? {
        referenceSeconds(bytes, localZone: localZone).map(Date.init(timeIntervalSinceReferenceDate:))
    }

    static func date(_ text: String, localZone: TimeZone? = nil) -> Date? {
        var text = text
        return text.withUTF8 { date(UnsafeRawBufferPointer($0), localZone: localZone) }
    }

    /// `date(_:)` as seconds since 2001, correctly rounded.
    static func referenceSeconds(_ bytes: UnsafeRawBufferPointer, localZone: TimeZone? = nil) -> Double? {
        // A cursor of its own, not local functions capturing the index: a captured `var` is
        // checked for exclusive access at run time on every call (12 calls a date, about 900
        // instructions a record on Pipelines/photos.json).
        var c = Cursor(bytes: bytes)
        guard bytes.count >= 8, let year = c.digits(4) else { return nil }
        let extended = c.take(45)  // -
        guard let month = c.digits(2), !extended || c.take(45), let day = c.digits(2),
              (1...12).contains(month), day >= 1, day <= daysIn(month, year) else { return nil }
        var hour = 0, minute = 0, second = 0
        var fraction = 0..<0
        var offset: Int?
        if !c.atEnd {
            guard c.peek == 84 || c.peek == 116 || c.peek == 32 else { return nil }  // T t space
            c.i += 1
            guard let h = c.digits(2) else { return nil }
            let colons = c.take(58)  // :
            guard let m = c.digits(2) else { return nil }
            hour = h
            minute = m
            if colons ? c.take(58) : (!c.atEnd && c.peek >= 48 && c.peek <= 57) {
                guard let s = c.digits(2) else { return nil }
                second = s
                if c.take(46) || c.take(44) {  // . ,
                    let start = c.i
                    while !c.atEnd, c.peek >= 48, c.peek <= 57 { c.i += 1 }
                    guard c.i > start else { return nil }
                    fraction = start..<c.i
                }
            }
            guard hour < 24, minute < 60, second < 60 else { return nil }
            if c.take(90) || c.take(122) {  // Z z
                offset = 0
            } else if !c.atEnd, c.peek == 43 || c.peek == 45 {  // + -
                let sign = c.peek == 45 ? -1 : 1
                c.i += 1
                guard let h = c.digits(2), h < 24 else { return nil }
                var m = 0
                if c.take(58) {
                    guard let minutes = c.digits(2) else { return nil }
                    m = minutes
                } else if !c.atEnd {
                    guard let minutes = c.digits(2) else { return nil }
                    m = minutes
                }
                guard m < 60 else { return nil }
                offset = sign * (h * 3600 + m * 60)
            }
        }
        guard c.atEnd else { return nil }
        let days = StoredDate.days(year: Int64(year), month: month, day: day)
        let local = days * 86_400 + Int64(hour * 3600 + minute * 60 + second)
        let zoneOffset = Int64(offset ?? localZone.map { Self.offset(of: $0, atLocal: local) } ?? 0)
        return StoredDate.seconds(local - zoneOffset - referenceSince1970, UnsafeRawBufferPointer(rebasing: bytes[fraction]))
    }

    /// A position in the bytes of an instant being read.
    private struct Cursor {
        let bytes: UnsafeRawBufferPointer
        var i = 0

        var atEnd: Bool { i >= bytes.count }
        /// The byte at the position; only when not `atEnd`.
        var peek: UInt8 { bytes[i] }

        /// The number `n` decimal digits write, the position after them; nil (the position
        /// unmoved) when fewer than `n` digits are there.
        mutating func digits(_ n: Int) -> Int? {
            guard i + n <= bytes.count else { return nil }
            var value = 0
            for k in i..<(i + n) {
                let d = Int(bytes[k]) &- 48
                guard d >= 0 && d <= 9 else { return nil }
                value = value * 10 + d
            }
            i += n
            return value
        }

        /// Whether the byte at the position is `byte`, stepping over it when it is.
        mutating func take(_ byte: UInt8) -> Bool {
            guard i < bytes.count, bytes[i] == byte else { return false }
            i += 1
            return true
        }
    }

    /// Seconds east of UTC in `zone` at the local time `local` (seconds since 1970 as if
    /// it were UTC); in a gap or an overlap, the offset before the change.
    static func offset(of zone: TimeZone, atLocal local: Int64) -> Int {
        let guess = zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(local)))
        return zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(local - Int64(guess))))
    }

    /// A decimal number of seconds (or milliseconds, `scale` 3) since 1970, as written in a
    /// feed (`1517966773.84`), as seconds since 2001, rounded once. Exponent forms go
    /// through a double first.
    static func referenceSeconds(unixText text: String, scale: Int) -> Double? {
        var bytes = Array(text.utf8)
        let negative = bytes.first == 45
        if negative || bytes.first == 43 { bytes.removeFirst() }
        let isDigit = { (byte: UInt8) in byte >= 48 && byte <= 57 }
        let dot = bytes.firstIndex(where: { !isDigit($0) }) ?? bytes.count
        let plainDecimal = dot > 0 && (dot == bytes.count
            || (bytes[dot] == 46 && dot + 1 < bytes.count && bytes[(dot + 1)...].allSatisfy(isDigit)))
        guard plainDecimal else {
            guard let value = Double(text), value.isFinite else { return nil }
            return value / Double(powersOfTen[scale]) - Double(referenceSince1970)
        }
        var integer = Array(bytes[..<dot])
        var fraction = dot < bytes.count ? Array(bytes[(dot + 1)...]) : []
        // Milliseconds: the last `scale` digits of the integer part move to the fraction.
        if scale > 0 {
            let padding = [UInt8](repeating: 48, count: max(0, scale - integer.count))
            integer = padding + integer
            fraction = Array(integer.suffix(scale)) + fraction
            integer.removeLast(scale)
        }
        while integer.count > 1, integer.first == 48 { integer.removeFirst() }
        guard integer.count <= 15, let magnitude = Int64(String(decoding: integer.isEmpty ? [48] : integer, as: UTF8.self)) else {
            guard let value = Double(text), value.isFinite else { return nil }
            return value / Double(powersOfTen[scale]) - Double(referenceSince1970)
        }
        return fraction.withUnsafeBytes { digits in
            if !negative { return StoredDate.seconds(magnitude - referenceSince1970, digits) }
            // -(m + 0.F) - r = -((m + r) + 0.F)
            return -StoredDate.seconds(magnitude + referenceSince1970, digits)
        }
    }

    private static let powersOfTen: [Int64] = (0...18).map { power in (0..<power).reduce(Int64(1)) { value, _ in value * 10 } }

    static func daysIn(_ month: Int, _ year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
