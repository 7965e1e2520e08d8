import Foundation
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// Date patterns are read by hand (a formatter per value was 26× slower than no date):
/// they must read what `DateFormatter` writes, exactly, and refuse what names no date.
@Suite struct DatePatternTests {
    static let patterns = [
        "yyyy-MM-dd HH:mm:ss", "dd/MMM/yyyy:HH:mm:ss Z", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "dd/MM/yyyy HH:mm", "yyyyMMdd",
        "d.M.yyyy H:mm", "'at' HH:mm:ss 'on' yyyy-MM-dd",
    ]

    @Test(arguments: patterns)
    func readsWhatDateFormatterWrites(pattern: String) throws {
        let compiled = DatePattern(pattern)
        #expect(compiled.fields != nil, "read by hand")
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = pattern
        var generator = SystemRandomNumberGenerator()
        // 2,000 random instants with `INGEST_STRESS`, 500 without.
        for _ in 0..<Stress.count(2_000, quick: 500) {
            // Whole milliseconds from 2000 to 2099, in UTC and at an offset.
            let millis = Double(Int64.random(in: 946_684_800_000...4_102_444_799_000, using: &generator))
            let date = Date(timeIntervalSince1970: millis / 1000)
            for zone in ["UTC", "Europe/Lisbon", "Asia/Kolkata"] {
                formatter.timeZone = TimeZone(identifier: zone)
                let text = formatter.string(from: date)
                let expected = try #require(formatter.date(from: text))
                // DateFormatter adds the fraction to a rounded value; Ingest rounds the sum once
                // (every spelling of an instant gives one double), so they may differ in the last bit.
                let read = try #require(compiled.date(from: text), "\(text)")
                #expect(abs(read.timeIntervalSince(expected)) < 1e-6, "\(text)")
                if !pattern.contains("Z") && !pattern.contains("X") { break }
            }
            formatter.timeZone = TimeZone(identifier: "UTC")
        }
    }

    @Test func textThatNamesNoDateIsRefused() {
        let pattern = DatePattern("yyyy-MM-dd HH:mm:ss")
        for text in ["2024-02-30 00:00:00", "2023-02-29 00:00:00", "2024-13-01 00:00:00", "2024-01-01 24:00:00",
                     "2024-01-01 00:60:00", "2024-01-01 00:00", "2024-01-01 00:00:00 extra", "24-01-01 00:00:00", ""] {
            #expect(pattern.date(from: text) == nil, "\(text)")
        }
        #expect(pattern.date(from: "2024-02-29 23:59:59") == Date(timeIntervalSince1970: 1_709_251_199))
    }

    @Test func fieldsNotReadByHandFallBackToAFormatter() throws {
        let pattern = DatePattern("EEE, dd MMM yyyy HH:mm:ss Z")
        #expect(pattern.fields == nil)
        #expect(DatePattern("dd.MM.yy").fields == nil)
        #expect(pattern.date(from: "Tue, 05 Mar 2024 12:00:00 +0000") == Date(timeIntervalSince1970: 1_709_640_000))
    }
}
