import Foundation
@testable import IngestJSON
import IngestStore
import Testing
@testable import IngestPipeline

/// Dates from feeds: every ISO 8601 spelling of an instant gives one value, rounded once;
/// local times are UTC unless a zone is named; the range is `StoredDate`'s; printing is
/// proleptic Gregorian and never traps.
@Suite struct ISO8601Tests {
    static func seconds(_ text: String, zone: TimeZone? = nil) -> Double? {
        ISO8601.date(text, localZone: zone)?.timeIntervalSinceReferenceDate
    }

    @Test func everySpellingOfAnInstantGivesTheSameCorrectlyRoundedValue() throws {
        let expected = try #require(Double("697489948.123"))
        for text in ["2023-02-07T19:12:28.123Z", "2023-02-07T19:12:28.123z", "2023-02-07T19:12:28.123+00:00",
                     "2023-02-07T20:12:28.123+01:00", "2023-02-07T18:42:28.123-0030", "2023-02-07T21:12:28.123+02",
                     "20230207T191228.123Z", "2023-02-07t19:12:28,123Z", "2023-02-07 19:12:28.123Z",
                     "2023-02-07T19:12:28.123", "2023-02-07T19:12:28.1230000Z", "20230207T201228.123+0100"] {
            #expect(Self.seconds(text) == expected, "\(text)")
        }
    }

    @Test func datesAndTimesWithoutAnOffsetAreUTC() {
        #expect(Self.seconds("1970-01-01") == -978_307_200)
        #expect(Self.seconds("19700101") == -978_307_200)
        #expect(Self.seconds("1971-01-01T04:14:00") == -946_755_960)
        #expect(Self.seconds("19710101T041400Z") == -946_755_960)
        #expect(Self.seconds("1971-01-01T04:14") == -946_755_960)
    }

    @Test func aNamedZoneAppliesToLocalTimesOnly() throws {
        let paris = try #require(TimeZone(identifier: "Europe/Paris"))
        // Winter (+01:00) and summer (+02:00) time; a time with an offset keeps its own.
        #expect(Self.seconds("2024-01-15T12:00:00", zone: paris) == Self.seconds("2024-01-15T11:00:00Z"))
        #expect(Self.seconds("2024-07-15T12:00:00", zone: paris) == Self.seconds("2024-07-15T10:00:00Z"))
        #expect(Self.seconds("2024-07-15T12:00:00Z", zone: paris) == Self.seconds("2024-07-15T12:00:00Z"))
        #expect(PipelineSpec.timeZone("+05:30")?.secondsFromGMT() == 19_800)
        #expect(PipelineSpec.timeZone("-0800")?.secondsFromGMT() == -28_800)
        #expect(PipelineSpec.timeZone("Mars/Olympus") == nil)
    }

    @Test func whatIsNotAnInstantIsRefused() {
        for bad in ["2024-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-03-05T24:00:00Z",
                    "2024-03-05T12:60:00Z", "2024-03-05T12:34:60Z", "2024-03-05T12:34:56.Z", "2024-03-05T12:34:56+2",
                    "2024-03-05Z", "2024-03-05T", "2024-03-05T12", "2024-3-5", "24-03-05", "2024-03-05T12:34:56+25:00",
                    "2024-03-05T12:34:56 +01:00", "2024-03-05T12:34:56Zx", "yesterday", "", "2024-03-05T12:34:56.123.4Z"] {
            #expect(Self.seconds(bad) == nil, "\(bad)")
        }
    }

    /// Against an independent sum: the instant's exact decimal, made with 128-bit
    /// integers, then rounded once by strtod.
    @Test func fractionsOfAnyLengthAreRoundedOnce() throws {
        var random = SplitMix64(seed: 1)
        func next() -> UInt64 { random.next() }
        for _ in 0..<3000 {
            let year = 1 + Int(next() % 9999), month = 1 + Int(next() % 12), day = 1 + Int(next() % 28)
            let h = Int(next() % 24), m = Int(next() % 60), s = Int(next() % 60)
            let digits = Int(next() % 16)
            let fraction = String((0..<digits).map { _ in Character(String(next() % 10)) })
            let text = String(format: "%04d-%02d-%02dT%02d:%02d:%02d", year, month, day, h, m, s)
                + (digits > 0 ? "." + fraction : "") + "Z"
            let whole = StoredDate.days(year: Int64(year), month: month, day: day) * 86_400 + Int64(h * 3600 + m * 60 + s) - 978_307_200
            var scaled = Int128(whole)
            for _ in 0..<digits { scaled *= 10 }
            scaled += Int128(fraction) ?? 0
            var magnitude = String(scaled.magnitude)
            if magnitude.count <= digits { magnitude = String(repeating: "0", count: digits - magnitude.count + 1) + magnitude }
            let sign: String = scaled < 0 ? "-" : ""
            let decimal: String = sign + String(magnitude.dropLast(digits)) + "." + String(magnitude.suffix(digits)) + "0"
            #expect(Self.seconds(text) == Double(decimal), "\(text) vs \(decimal)")
        }
    }

    @Test func unixNumbersAreRoundedOnceToo() throws {
        let expected = try #require(Double("539659573.84"))
        #expect(try ValueCoercion.value(.number("1517966773.84"), for: .date, dates: [.unixSeconds]) == .date(Date(timeIntervalSinceReferenceDate: expected)))
        #expect(try ValueCoercion.value(.number("1517966773840"), for: .date, dates: [.unixMilliseconds]) == .date(Date(timeIntervalSinceReferenceDate: expected)))
        #expect(try ValueCoercion.value(.string("1517966773840"), for: .date, dates: [.unixMilliseconds]) == .date(Date(timeIntervalSinceReferenceDate: expected)))
        #expect(try ValueCoercion.value(.number("-1.5"), for: .date, dates: [.unixSeconds]) == .date(Date(timeIntervalSinceReferenceDate: -978_307_201.5)))
        #expect(try ValueCoercion.value(.number("1.5e3"), for: .date, dates: [.unixSeconds]) == .date(Date(timeIntervalSince1970: 1500)))
    }

    @Test func datesOutsideTheStoredRangeAreRejectedWithTheRange() throws {
        for (json, formats) in [(JSONValue.number("10000000000000"), [DateFormat.unixSeconds]), (.number("1e300"), [.unixSeconds]),
                                (.number("-1e300"), [.unixMilliseconds]), (.number("9223372036854775807"), [.unixSeconds]),
                                (.number("253402300800"), [.unixSeconds])] {
            #expect(throws: CoercionError("\(json.description) is outside the dates a store holds (0001-01-01 to 9999-12-31 UTC)")) {
                try ValueCoercion.value(json, for: .date, dates: formats)
            }
        }
        #expect(try ValueCoercion.value(.string("9999-12-31T23:59:59.999Z"), for: .date) != nil)
        #expect(try ValueCoercion.value(.string("0001-01-01T00:00:00Z"), for: .date) != nil)
        #expect(throws: CoercionError("-62135596801 is outside the dates a store holds (0001-01-01 to 9999-12-31 UTC)")) {
            try ValueCoercion.value(.number("-62135596801"), for: .date, dates: [.unixSeconds])
        }
    }

    @Test func printingIsProlepticGregorianAndNeverTraps() throws {
        #expect(StoredDate.iso8601(try #require(ISO8601.date("1000-06-15T12:00:00Z"))) == "1000-06-15T12:00:00.000Z")
        #expect(StoredDate.iso8601(try #require(ISO8601.date("0001-01-01T00:00:00Z"))) == "0001-01-01T00:00:00.000Z")
        #expect(StoredDate.iso8601(try #require(ISO8601.date("2001-01-01T00:00:00.000001Z"))) == "2001-01-01T00:00:00.000001Z")
        #expect(StoredDate.iso8601(try #require(ISO8601.date("1582-10-04T23:59:59.500Z"))) == "1582-10-04T23:59:59.500Z")
        #expect(StoredDate.iso8601(Date(timeIntervalSince1970: 1e13)) == "+318857-05-20T17:46:40.000Z")
        #expect(StoredDate.iso8601(Date(timeIntervalSince1970: 1e300)) == "1e+300 s since 1970-01-01T00:00:00Z")
        #expect(StoredDate.iso8601(Date(timeIntervalSince1970: -1e300)) == "-1e+300 s since 1970-01-01T00:00:00Z")
        #expect(StoredDate.iso8601(Date(timeIntervalSince1970: .infinity)) == "inf s since 1970-01-01T00:00:00Z")
        #expect(StoredDate.iso8601(Date(timeIntervalSince1970: .nan)) == "NaN")
        #expect(StoredDate.iso8601(Date(timeIntervalSince1970: Double(Int64.max))) == "9.223372036854776e+18 s since 1970-01-01T00:00:00Z")
        // Every day of the range prints as the date it was read from.
        var days = StoredDate.days(year: 1, month: 1, day: 1)
        while days < StoredDate.days(year: 10000, month: 1, day: 1) {
            let (year, month, day) = StoredDate.civil(days: days)
            #expect(StoredDate.days(year: year, month: month, day: day) == days)
            days += 997
        }
    }
}
