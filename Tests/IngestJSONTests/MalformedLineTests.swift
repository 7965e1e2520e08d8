import Foundation
import IngestTestSupport
import Testing
@testable import IngestJSON

/// NDJSON with `rejectsMalformedLines`: each malformed line becomes one refused record,
/// with its line, column, reason and text, and the read goes on with the next line,
/// wherever the reads fall.
@Suite struct MalformedLineTests {
    /// Good lines, a line cut short, garbage, two values on a line, invalid UTF-8, and a
    /// last line without its end.
    static let feed: [UInt8] = Array(#"{"id":1,"v":"a"}"#.utf8) + [0x0A] + Array(#"{"id":2,"v":"#.utf8) + [0x0A]
        + Array(#"{"id":3,"v":"c"}"#.utf8) + [0x0A] + Array("not json at all".utf8) + [0x0A]
        + Array(#"{"id":4,"v":"d"} {"id":5}"#.utf8) + [0x0A, 0x0A] + Array(#"{"id":6,"v":""#.utf8) + [0xFF] + Array(#""}"#.utf8) + [0x0A]
        + Array(#"{"id":7,"v":"g"}"#.utf8) + [0x0A] + Array(#"{"id":8,"v":"h""#.utf8)

    /// Each record read: its text, or its refusal's message and the line's text.
    static func read(_ bytes: [UInt8], readSize: Int) throws -> [String] {
        var options = FeedOptions(shape: .ndjson)
        options.rejectsMalformedLines = true
        let reader = FeedReader(source: MemoryByteSource(bytes, readSize: readSize), name: "test", options: options)
        var records: [String] = []
        try reader.read { record in
            #expect(record.index == records.count)
            if let refusal = record.refusal {
                records.append("\(refusal.message) | \(String(decoding: record.refusedText ?? [], as: UTF8.self)) @\(record.byteOffset)")
            } else {
                records.append(String(decoding: record.bytes, as: UTF8.self))
            }
        }
        return records
    }

    @Test(arguments: [1, 2, 3, 7, 16, 64, .max])
    func eachMalformedLineIsOneRefusedRecordWhereverTheReadsFall(readSize: Int) throws {
        let records = try Self.read(Self.feed, readSize: readSize)
        #expect(records == [
            #"{"id":1,"v":"a"}"#,
            #"malformed line 2, column 1 (byte 17): the line ends inside record 2 (NDJSON holds one value per line) | {"id":2,"v": @17"#,
            #"{"id":3,"v":"c"}"#,
            "malformed line 4, column 1 (byte 47): malformed JSON: invalid literal (JSON's literals are true, false and null) | not json at all @47",
            #"{"id":4,"v":"d"}"#,
            #"malformed line 5, column 18 (byte 80): record 6 starts on the line of the record before it (NDJSON holds one value per line) | {"id":5} @80"#,
            "malformed line 7, column 14 (byte 103): invalid UTF-8 inside a string | {\"id\":6,\"v\":\"\u{FFFD}\"} @90",
            #"{"id":7,"v":"g"}"#,
            #"malformed line 9, column 16 (byte 139): the feed ends inside record 9, which began at byte 124 | {"id":8,"v":"h" @124"#,
        ], "read \(readSize) bytes at a time")
    }

    @Test func withoutTheOptionTheFirstMalformedLineStopsTheFeed() throws {
        // Read as one stream, the cut line takes the next line in as its value: the error
        // shows on line 4, which is why line mode reads a line at a time.
        let error = feedError(Self.feed, shape: .ndjson)
        #expect(error?.position.line == 4 && error?.kind == .malformedJSON, "\(String(describing: error))")
    }

    @Test func aFeedOfGoodLinesReadsAsWithoutTheOption() throws {
        let lines = (1...500).map { #"{"id":\#($0),"name":"n\#($0)"}"# }.joined(separator: "\n") + "\n"
        let plain = try readRecords(Array(lines.utf8), shape: .ndjson).map(\.text)
        for readSize in [5, 4096] {
            #expect(try Self.read(Array(lines.utf8), readSize: readSize) == plain)
        }
    }
}
