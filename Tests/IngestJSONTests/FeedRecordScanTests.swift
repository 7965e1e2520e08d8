import Foundation
@testable import IngestJSON
import IngestTestSupport
import Testing

/// The C scan that takes a top-level array's records between the ones yajl reads
/// (record_scan.h, FeedParser+Scan.swift) must change nothing a reader hands out: the same
/// records at the same offsets with the same member ends, the same refusals, and the same
/// error at the same place, for well-formed feeds and broken ones alike, wherever the reads fall.
@Suite struct FeedRecordScanTests {
    /// Everything a read hands out, in a form two reads can be compared by.
    struct Outcome: Equatable {
        var records: [String] = []
        var error: String?
        var scanned = 0
    }

    static func read(_ bytes: [UInt8], scanning: Bool, readSize: Int, bufferSize: Int = 256 << 10, shape: FeedShape = .array,
                     maxDepth: Int = 512, maxRecordBytes: Int = 64 << 20) -> Outcome {
        let options = FeedOptions(shape: shape, maxDepth: maxDepth, maxRecordBytes: maxRecordBytes, readBufferSize: bufferSize)
        let reader = FeedReader(source: MemoryByteSource(bytes, readSize: readSize), name: "scan", options: options)
        reader.collectsMemberEnds = true
        reader.scansRecords = scanning
        var outcome = Outcome()
        do {
            try reader.read { record in
                let ends = record.memberEnds.map { Array($0).map(String.init).joined(separator: ",") } ?? "none"
                let refusal = record.refusal.map { "refused: \($0.message) at \($0.position)" } ?? ""
                outcome.records.append("#\(record.index) @\(record.byteOffset) \(String(decoding: record.bytes, as: UTF8.self)) ends \(ends) \(refusal)")
            }
        } catch let error as FeedError {
            outcome.error = "\(error.kind) \(error.message) at \(error.position) [\(error.excerpt)|\(error.caret)]"
        } catch {
            outcome.error = "\(error)"
        }
        outcome.scanned = reader.scannedRecords
        return outcome
    }

    /// Reads `bytes` with and without the scan and expects the same outcome.
    static func expectSame(_ bytes: [UInt8], readSize: Int, shape: FeedShape = .array, maxDepth: Int = 512, maxRecordBytes: Int = 64 << 20,
                           _ comment: @autoclosure () -> String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        let yajl = read(bytes, scanning: false, readSize: readSize, shape: shape, maxDepth: maxDepth, maxRecordBytes: maxRecordBytes)
        let scan = read(bytes, scanning: true, readSize: readSize, shape: shape, maxDepth: maxDepth, maxRecordBytes: maxRecordBytes)
        #expect(scan.records == yajl.records && scan.error == yajl.error, "\(comment()) read size \(readSize): \(String(decoding: bytes.prefix(300), as: UTF8.self))",
                sourceLocation: sourceLocation)
    }

    /// Records the scan must take as yajl does: escapes, UTF-8, numbers, literals, nesting,
    /// records that are not objects, whitespace between tokens.
    static let records: [String] = [
        #"{"id":1,"title":"plain","views":"55302","skip":{"a":[1,{"b":"}"}]},"photographer":{"id":7,"name":"Ana"}}"#,
        #"{ "id" : 2 , "title" : "spaced" , "tags" : [ "a" , "b" ] , "known" : null }"#,
        #"{"id":3,"title":"a\"quote","other":"x\\y","views":-0.5e+3,"n":0,"m":-0,"e":1E9,"f":12.50e-1}"#,
        #"{"id":4,"title":"caf\u00e9 \ud83d\ude00","photographer":"p4","u":"\u0000\uFFFF\/\b\f\n\r\t"}"#,
        "{\"id\":5,\"title\":\"caf\u{E9} \u{1F600} \u{10FFFF} \u{7F} \u{800}\",\"subtitle\":\"\"}",
        #"{}"#, #"{ }"#, #"[]"#, #"[1,"a",{"b":null}]"#, #"17"#, #""s""#, #"true"#, #"false"#, #"null"#, "-2.5",
        #"{"i\u0064":6,"title":"escaped key"}"#,
        #"{"id":7,"id":8}"#,
        #"{"id":9,"title":"\uD800"}"#,
        #"{"deep":"# + String(repeating: "[", count: 58) + "1" + String(repeating: "]", count: 58) + "}",
        #"{"deeper":"# + String(repeating: "[", count: 70) + "1" + String(repeating: "]", count: 70) + "}",
        #"{"id":true,"title":false,"views":null,"tags":[],"o":{}}"#,
        #"{"id":11,"photographer":{"name":"N\"x","id":"12","more":{"k\n":[null]}},"tail":123456789012345678901234567890}"#,
        #"{"":0,"id":12,"long":""# + String(repeating: "abcdefghij", count: 30) + #""}"#,
        "{\"id\":13,\n\t\"title\" :\r\n \"two lines\"  }",
    ]

    static var feed: [UInt8] { Array(("[\n" + records.joined(separator: ",\n") + "\n]\n").utf8) }

    @Test(arguments: [16, 100, 1000, Int.max])
    func everyKindOfRecordReadsTheSameWithTheScan(readSize: Int) {
        Self.expectSame(Self.feed, readSize: readSize)
        if readSize == .max {
            // All but the first (yajl's) and the one nested past the scan's 60 levels.
            #expect(Self.read(Self.feed, scanning: true, readSize: readSize).scanned == Self.records.count - 2)
        }
    }

    @Test func theScanTakesAllButAboutOneRecordARead() {
        let bytes = FeedGenerator(records: 2_000, seed: 11, style: .realistic).bytes()
        let yajl = Self.read(bytes, scanning: false, readSize: .max, bufferSize: 64 << 10)
        let scan = Self.read(bytes, scanning: true, readSize: .max, bufferSize: 64 << 10)
        #expect(scan == Outcome(records: yajl.records, error: yajl.error, scanned: scan.scanned))
        #expect(scan.records.count == 2_000 && yajl.scanned == 0)
        // yajl reads the first record, and one that a read's end cuts (about 1.2 MB in 64 KiB reads).
        let reads = (bytes.count + (64 << 10) - 1) / (64 << 10)
        #expect(scan.scanned >= 2_000 - 1 - reads, "\(scan.scanned) scanned, \(reads) reads")
    }

    /// Bytes the scan must leave to yajl, each in a record between good ones: yajl's error,
    /// or its refusal, at yajl's place.
    static let broken: [String] = [
        #"{"a":"x\u12G4"}"#, #"{"a":"x\q"}"#, "{\"a\":\"x\u{01}\"}", #"{"a":01}"#, #"{"a":1.}"#, #"{"a":1e}"#,
        #"{"a":-}"#, #"{"a":tru}"#, #"{"a":nulll}"#, #"{"a":1 2}"#, #"{"a" 1}"#, #"{"a":1,}"#, #"{a:1}"#,
        #"{"a":[1,]}"#, #"{"a":[1}"#, #"{"a":1]"#, #"{"a":{"b":1}"#, #"{"a":1}}"#, #"{"a":+1}"#, #"{"a":.5}"#,
        #"{"a":NaN}"#, #"{"a":"x"}{"b":1}"#, #"{"a":1} ,, {"b":2}"#, #"{"a":"unterminated}"#,
    ]

    @Test(arguments: [7, 64, Int.max])
    func malformedRecordsFailAtYajlsPlaceWithTheScan(readSize: Int) {
        for bad in Self.broken {
            let text = "[" + Self.records.prefix(3).joined(separator: ",") + "," + bad + "," + Self.records[0] + "]"
            Self.expectSame(Array(text.utf8), readSize: readSize, bad)
        }
        // Bytes no string may hold, or hold only as RFC 3629 UTF-8.
        let invalid: [[UInt8]] = [[0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
                                  [0xF5, 0x80, 0x80, 0x80], [0x80], [0xC3], [0xE2, 0x82], [0xFF], [0x0B], [0x0C], [0x7F]]
        for bytes in invalid {
            let good = Array(("[" + Self.records[0] + ",").utf8)
            Self.expectSame(good + Array(#"{"a":"x"#.utf8) + bytes + Array(#"y"},{"b":1}]"#.utf8), readSize: readSize, "\(bytes)")
            Self.expectSame(good + Array(#"{"a":1"#.utf8) + bytes + Array(#"}]"#.utf8), readSize: readSize, "outside \(bytes)")
        }
    }

    @Test func recordsOverALimitAreRefusedAsYajlRefusesThem() {
        let deep = "[" + Self.records[0] + "," + #"{"a":[[[[1]]]]}"# + "," + Self.records[1] + "," + #"{"b":[[[[[[2]]]]]]}"# + "]"
        for maxDepth in [1, 2, 3, 5, 6, 7] {
            Self.expectSame(Array(deep.utf8), readSize: .max, maxDepth: maxDepth, "max depth \(maxDepth)")
        }
        for maxRecordBytes in [10, 40, 100, 120, 200] {
            Self.expectSame(Self.feed, readSize: .max, maxRecordBytes: maxRecordBytes, "max record bytes \(maxRecordBytes)")
        }
    }

    @Test func theArraysEndAndWhatFollowsItReadTheSame() {
        for tail in ["]", "]\n", "] x", "]]", "", ",", ", ", ",]", "] [1]", "]\n\"abc"] {
            let text = "[" + Self.records.prefix(4).joined(separator: ",") + tail
            for readSize in [5, Int.max] { Self.expectSame(Array(text.utf8), readSize: readSize, tail) }
        }
    }

    /// Records at a key path: the scan takes them as in a top-level array, and yajl, brought
    /// back inside the objects around the array, reads what follows it as before.
    @Test(arguments: [64, 1000, Int.max])
    func recordsAtAKeyPathReadTheSameWithTheScan(readSize: Int) {
        let records = "[" + Self.records.joined(separator: ",") + "]"
        let feeds: [(String, [String])] = [
            (#"{"data":"# + records + "}", ["data"]),
            (#"{"meta":{"n":1},"data":{"items":"# + records + #","next":null},"more":[1,2]}"#, ["data", "items"]),
            (#"{"data":"# + records + #","data":[]}"#, ["data"]),
            (#"{"data":{"items":"# + records + #"},"data":{"x":1}}"#, ["data", "items"]),
            (#"{"data":"# + records + #"} x"#, ["data"]),
            (#"{"data":"# + records, ["data"]),
            (#"{"data":"# + String(records.dropLast()) + #",{"a":01}]}"#, ["data"]),
        ]
        for (text, keys) in feeds {
            Self.expectSame(Array(text.utf8), readSize: readSize, shape: .keyPath(keys), keys.joined(separator: "."))
        }
        if readSize == .max {
            let scanned = Self.read(Array(feeds[1].0.utf8), scanning: true, readSize: readSize, shape: .keyPath(["data", "items"])).scanned
            #expect(scanned == Self.records.count - 2)
        }
    }

    /// NDJSON: records a line apart, taken by the scan as yajl takes them; two on a line, a
    /// line break inside a record, blank lines and broken lines as yajl reads them.
    @Test(arguments: [64, 1000, Int.max])
    func ndjsonReadsTheSameWithTheScan(readSize: Int) {
        let lines = Self.records.map { $0.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\r", with: " ") }
        let feeds: [String] = [
            lines.joined(separator: "\n") + "\n",
            lines.joined(separator: "\r\n") + "\r\n\n\n",
            lines.joined(separator: "\n"),
            lines.prefix(5).joined(separator: "\n") + "\n" + lines[1] + " " + lines[2] + "\n" + lines[3],
            lines.prefix(5).joined(separator: "\n") + "\n{\"a\":\n1}\n" + lines[4],
            lines.prefix(5).joined(separator: "\n") + "\n" + Self.broken.joined(separator: "\n"),
            lines.prefix(5).joined(separator: "\n") + "\n[1,2]\n17\n\"s\"\nnull\n{\"a\":1},\n{\"b\":2}\n",
        ]
        for text in feeds {
            Self.expectSame(Array(text.utf8), readSize: readSize, shape: .ndjson, String(text.prefix(60)))
        }
        if readSize == .max {
            #expect(Self.read(Array(feeds[0].utf8), scanning: true, readSize: readSize, shape: .ndjson).scanned == lines.count - 2)
        }
    }

    /// Random mutations of a realistic NDJSON feed: the scan changes nothing.
    @Test func mutatedNDJSONReadsTheSameWithTheScan() {
        let iterations = ProcessInfo.processInfo.environment["INGEST_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 400
        let base = FeedGenerator(records: 40, seed: 13, ndjson: true, style: .realistic).bytes()
        var random = SeededRandom(seed: 1202)
        for iteration in 0..<iterations {
            let bytes = HostileInputTests.mutated(base, &random)
            Self.expectSame(bytes, readSize: [64, 500, 4096, Int.max][random.next(4)], shape: .ndjson, "iteration \(iteration)")
        }
    }

    /// Random mutations of a realistic feed: whatever they break, the scan changes nothing.
    /// INGEST_FUZZ_ITERATIONS runs more.
    @Test func mutatedFeedsReadTheSameWithTheScan() {
        let iterations = ProcessInfo.processInfo.environment["INGEST_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 400
        var base = FeedGenerator(records: 40, seed: 9, style: .realistic).bytes()
        base.removeSubrange(base.lastIndex(of: UInt8(ascii: "]"))!...)
        base += Array((",\n" + Self.records.joined(separator: ",\n") + "]\n").utf8)
        var random = SeededRandom(seed: 1201)
        for iteration in 0..<iterations {
            let bytes = HostileInputTests.mutated(base, &random)
            let readSize = [64, 500, 4096, Int.max][random.next(4)]
            Self.expectSame(bytes, readSize: readSize, "iteration \(iteration)")
        }
    }
}
