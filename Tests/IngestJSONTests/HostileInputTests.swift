import Foundation
import IngestTestSupport
import Testing
@testable import IngestJSON

/// Feeds nobody should write: each ends as records or as a located error, never a
/// crash, a hang or a silent change.
@Suite struct HostileInputTests {
    /// What an importer of the photo feed keeps of each record.
    static let selection: JSONSelection = {
        var selection = JSONSelection.none
        for key in ["id", "title", "views", "tags", "uploadDate"] { selection.keep([key]) }
        var photographer = JSONSelection.none
        photographer.keep(["id"])
        photographer.keep(["name"])
        selection.keep(["photographer"], inside: photographer)
        return selection
    }()

    /// The selected paths of a value, as an importer reads them.
    static func selected(_ value: JSONValue) -> [JSONValue?] {
        let photographer = value["photographer"]
        var looked: [JSONValue?] = ["id", "title", "views", "tags", "uploadDate"].map { value[$0] }
        if case .object? = photographer {
            looked += [photographer?["id"], photographer?["name"]]
        } else {
            looked.append(photographer)
        }
        return looked
    }

    /// JSON's tokens, escapes and bytes that are not UTF-8, for `mutated`.
    static let tokens: [[UInt8]] = ["{", "}", "[", "]", "\"", ",", ":", "\\", "\\u", "\\uD800", "\\uDC00", "-", "1e999", "null", "tru",
                                    "[[[[[[[[", "}}}}", "\u{0}", "é"].map { Array($0.utf8) } + [[0xC0, 0x80], [0xFF], [0xED, 0xA0, 0x80]]

    /// `base` with one to four random changes: a byte replaced, bytes cut, a token put in,
    /// or a stretch of it copied elsewhere.
    static func mutated(_ base: [UInt8], _ random: inout SeededRandom) -> [UInt8] {
        var bytes = base
        for _ in 0..<(1 + random.next(4)) {
            let at = random.next(bytes.count)
            switch random.next(4) {
            case 0: bytes[at] = UInt8(random.next(256))
            case 1: bytes.removeSubrange(at..<min(bytes.count, at + 1 + random.next(30)))
            case 2: bytes.insert(contentsOf: tokens[random.next(tokens.count)], at: at)
            default: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + random.next(60))], at: random.next(bytes.count))
            }
            if bytes.isEmpty { bytes = [UInt8(ascii: "[")] }
        }
        return bytes
    }

    /// Random mutations of a generated feed (a plain seeded mutation test: libFuzzer's
    /// `-sanitize=fuzzer` needs a main-less harness this package does not build).
    /// Every outcome is records or a located `FeedError`; every record the reader gives
    /// parses the same, or fails with the same error, with and without a selection.
    /// INGEST_FUZZ_ITERATIONS runs more (the default keeps the test suite quick).
    @Test func mutatedFeedsGiveRecordsOrLocatedErrors() throws {
        let iterations = ProcessInfo.processInfo.environment["INGEST_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 400
        let base = FeedGenerator(records: 12, seed: 5).bytes()
        var random = SeededRandom(seed: 2026)
        let dir = try TemporaryDirectory()
        var located = 0, clean = 0
        for iteration in 0..<iterations {
            let bytes = Self.mutated(base, &random)
            var records: [[UInt8]] = []
            do {
                let reader = FeedReader(source: MemoryByteSource(bytes, readSize: 1 + random.next(200)), name: "fuzz")
                try reader.read { records.append(Array($0.bytes)) }
                clean += 1
            } catch let error as FeedError {
                #expect(error.position.byteOffset >= 0 && error.position.byteOffset <= bytes.count, "iteration \(iteration)")
                #expect(error.position.line >= 1 && error.position.column >= 1, "iteration \(iteration)")
                located += 1
            }
            for record in records {
                record.withUnsafeBytes { raw in
                    let whole: Result<JSONValue, FeedError> = Result { try JSONValue.parse(raw) }.mapError { $0 as! FeedError }
                    let kept: Result<JSONValue, FeedError> = Result { try JSONValue.parse(raw, keeping: Self.selection) }.mapError { $0 as! FeedError }
                    switch (whole, kept) {
                    case (.success(let a), .success(let b)):
                        #expect(Self.selected(a) == Self.selected(b), "iteration \(iteration): \(String(decoding: record, as: UTF8.self))")
                    case (.failure(let a), .failure(let b)):
                        #expect(a.message == b.message && a.position == b.position, "iteration \(iteration)")
                    default:
                        Issue.record("iteration \(iteration): the full and the selective parse disagree on \(String(decoding: record, as: UTF8.self))")
                    }
                }
            }
            // The splitter on the same bytes: a complete split or a located error, nothing else.
            let feed = try dir.write("fuzz.json", bytes)
            do {
                _ = try Splitter(feedPath: feed, directory: dir.file("chunks"), options: SplitOptions(chunkSize: 5, force: true)).run()
            } catch let error as FeedError {
                #expect(error.position.line >= 1, "iteration \(iteration)")
            }
        }
        #expect(located > 0 && clean > 0, "the mutations reach both outcomes (\(clean) clean, \(located) located errors)")
    }

    @Test func tenThousandLevelsOfNestingStopAtTheDepthLimitWithTheirPlace() throws {
        let bytes = Array(("[" + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + "]").utf8)
        let error = try #require(try refusedRecords(bytes).refused[0])
        #expect(error.kind == .depthLimitExceeded)
        #expect(error.position.byteOffset == 512 && error.position.line == 1 && error.position.column == 513)
        #expect(throws: FeedError.self) { try JSONValue.parse(Array(bytes.dropFirst().dropLast())) }
    }

    /// A value held whole is walked and released a level at a time: however deep the caller
    /// allows (`infer --max-depth 100000`), it stops at `maxHeldDepth` instead of the stack.
    @Test(arguments: ["{\"k\":", "["])
    func thirtyThousandLevelsHeldWholeStopAtTheHeldDepthLimitNotTheStack(opener: String) throws {
        let closer = opener == "[" ? "]" : "}"
        let text = "{\"id\":\"a\",\"junk\":" + String(repeating: opener, count: 30_000) + "1" + String(repeating: closer, count: 30_000) + "}"
        do {
            _ = try JSONValue.parse(Array(text.utf8), maxDepth: 100_000)
            Issue.record("a value 30,000 levels deep was held whole")
        } catch let error as FeedError {
            #expect(error.kind == .depthLimitExceeded)
            #expect(error.message.contains("the value nests deeper than the limit of \(JSONValue.maxHeldDepth) levels"), "\(error.message)")
        }
        let nested = String(repeating: opener, count: JSONValue.maxHeldDepth - 1) + "1" + String(repeating: closer, count: JSONValue.maxHeldDepth - 1)
        #expect(try JSONValue.parse(Array(nested.utf8), maxDepth: 100_000) != .null, "the limit itself is held")
    }

    /// Found by probing: one record over the limit stopped the whole import for good. It is
    /// written as a row the importer rejects, with the limit's message, and the split goes on.
    @Test func aHundredMegabyteStringIsRefusedAtTheRecordLimitAndAFortyMegabyteRecordSplits() throws {
        let dir = try TemporaryDirectory()
        let big = try dir.write("big.json", Array(#"[{"id":"a","title":""#.utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 100 << 20)
                                + Array(#""}, {"id":"b"}]"#.utf8))
        let split = try Splitter(feedPath: big, directory: dir.file("big-chunks")).run()
        #expect(split.manifest.totalRecords == 2 && split.refused == 1)
        let lines = try FileOps.readFile(dir.file("big-chunks/chunk-000001.ndjson")).split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
        #expect(lines == [#"{"@rowError":"record 1 (from byte 1) is 104857621 bytes, over the record size limit of 67108864 bytes"}"#, #"{"id":"b"}"#])
        let huge = try dir.write("huge.json", Array(#"[{"id":"a","title":""#.utf8) + [UInt8](repeating: UInt8(ascii: "y"), count: 40 << 20) + Array(#""}]"#.utf8))
        let report = try Splitter(feedPath: huge, directory: dir.file("huge-chunks")).run()
        #expect(report.manifest.totalRecords == 1 && report.manifest.chunks.count == 1)
        let chunk = try FileOps.readFile(dir.file("huge-chunks/chunk-000001.ndjson"))
        let value = try chunk.withUnsafeBytes { try JSONValue.parse(UnsafeRawBufferPointer(rebasing: $0.dropLast())) }
        #expect(value["title"]?.stringValue?.utf8.count == 40 << 20)
    }

    @Test func twoMillionTinyRecordsSplitExactly() throws {
        let dir = try TemporaryDirectory()
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        bytes.reserveCapacity(6_000_002)
        for index in 0..<2_000_000 { bytes += index == 0 ? Array("{}".utf8) : Array(",{}".utf8) }
        bytes.append(UInt8(ascii: "]"))
        let feed = try dir.write("tiny.json", bytes)
        let report = try Splitter(feedPath: feed, directory: dir.file("chunks"), options: SplitOptions(chunkSize: 500_000)).run()
        #expect(report.manifest.totalRecords == 2_000_000)
        #expect(report.manifest.chunks.map(\.records) == [500_000, 500_000, 500_000, 500_000])
        #expect(report.manifest.chunks.map(\.byteSize) == [1_500_000, 1_500_000, 1_500_000, 1_500_000])
    }

    /// Each byte value raw inside a string: printable ASCII stays itself; control
    /// characters and lone bytes ≥ 0x80 are located errors at that byte; the quote and
    /// the backslash change the JSON's meaning and are read as such. Escaped, all 256
    /// code points come back exactly.
    @Test func everyByteValueInsideAStringIsReadExactlyOrLocated() throws {
        for byte in 0...255 {
            let bytes = Array(#"[{"s":"x"#.utf8) + [UInt8(byte)] + Array(#"y"}]"#.utf8)
            let outcome = Result { try readRecords(bytes) as [ReadRecord] }
            switch byte {
            case 0x22, 0x5C:
                continue
            case 0x20...0x7F:
                let record = try #require(try outcome.get().first)
                #expect(try JSONValue.parse(record.text)["s"] == .string("x" + String(UnicodeScalar(UInt8(byte))) + "y"))
            default:
                guard case .failure(let error as FeedError) = outcome else {
                    Issue.record("byte \(byte) was accepted raw in a string")
                    continue
                }
                #expect(error.position.byteOffset == 8, "byte \(byte): \(error)")
            }
        }
        let escaped = (0...255).map { String(format: "\\u%04x", $0) }.joined()
        let value = try JSONValue.parse(#"{"s":""# + escaped + #""}"#)
        #expect(value["s"] == .string(String(String.UnicodeScalarView((0...255).map { UnicodeScalar(UInt8($0)) }))))
    }

    /// yajl's UTF-8 check lets an overlong NUL (C0 80) through; parsing the record names
    /// it instead of turning it into U+FFFD.
    @Test func overlongUTF8IsRefusedNeverReplaced() throws {
        let record = Array(#"{"id":"a","title":"x"#.utf8) + [0xC0, 0x80] + Array(#"y"}"#.utf8)
        for parse in [{ try JSONValue.parse($0) }, { try JSONValue.parse($0, keeping: Self.selection) }] as [(UnsafeRawBufferPointer) throws -> JSONValue] {
            let error = #expect(throws: FeedError.self) { try record.withUnsafeBytes { try parse($0) } }
            #expect(error?.kind == .invalidUTF8)
            #expect(error?.message == "invalid UTF-8 in a string (an overlong or surrogate encoding)")
            #expect(error?.position.byteOffset == 18, "the string's opening quote")
        }
    }

    /// A keyed record with a member "@key" of its own would lose its name to it without a
    /// word (the last of two equal members wins): it is marked for the importer to reject,
    /// with its reason; "@key" deeper in a record is just data.
    @Test func aKeyedRecordWithItsOwnKeyMemberIsMarkedForRejection() throws {
        var shaper = RecordShaper(form: .objects)
        func shaped(_ text: String, key: String) throws -> String {
            let bytes = Array(text.utf8)
            return try bytes.withUnsafeBytes { record in
                try shaper.shape(FeedRecord(index: 0, bytes: record, byteOffset: 0, key: key),
                                 error: { FeedError(.malformedJSON, $0, at: SourcePosition(byteOffset: 0, line: 1, column: 1)) })
            }.map { String(decoding: $0, as: UTF8.self) } ?? "-"
        }
        #expect(try shaped(#"{"@key":"2","type":"a"}"#, key: "1")
                == #"{"@rowError":"the record named \"1\" has a member \"@key\" of its own, which its name would be taken for","@row":{"@key":"2","type":"a"}}"#)
        #expect(try shaped(#"{"x":{"@key":1}}"#, key: "4") == #"{"@key":"4","x":{"@key":1}}"#)
        // The same name written with escapes is the same member.
        #expect(try shaped(#"{"@k\u0065y":5}"#, key: "6").hasPrefix(#"{"@rowError":"the record named \"6\" has a member"#))
        #expect(try shaped(#"{"\u0040key":5}"#, key: "7").hasPrefix(#"{"@rowError":"the record named \"7\" has a member"#))
        #expect(try shaped(#""@key""#, key: "5") == #"{"@key":"5","@value":"@key"}"#)
    }

    /// A keyed record whose name holds a surrogate escape that is not half of a pair keeps
    /// the name as the feed wrote it (yajl's decoding would make it `?` or another
    /// character, and `{"\ud800":…}` would then overwrite a record named "?"), so the
    /// importer rejects it for the escape; names that decode faithfully are decoded as before.
    @Test func aKeyedRecordsLoneSurrogateNameIsKeptAsWrittenWhereverTheReadsCut() throws {
        let feed = Array(#"{"\ud800":{"t":1},"x\ud800\u0041":{"t":2},"\udc00":{"t":3},"\ud83d\ude00":{"t":4},"caf\u00e9":{"t":5},"?":{"t":6}}"#.utf8)
        for readSize in [Int.max, 1, 2, 3, 7] {
            let reader = FeedReader(source: MemoryByteSource(feed, readSize: readSize), name: "test",
                                    options: FeedOptions(shape: .keyed([])))
            var names: [String] = []
            try reader.read { record in
                names.append(record.keyText.map { String(decoding: $0, as: UTF8.self) } ?? "decoded " + (record.key ?? "-"))
            }
            #expect(names == [#""\ud800""#, #""x\ud800\u0041""#, #""\udc00""#, "decoded 😀", "decoded café", "decoded ?"],
                    "read size \(readSize)")
        }
        var shaping = RecordShaper(form: .objects)
        let record = Array(#"{"t":1}"#.utf8)
        let shaped = try record.withUnsafeBytes { bytes in
            try shaping.shape(FeedRecord(index: 0, bytes: bytes, byteOffset: 0, key: "?", keyText: Array(#""\ud800""#.utf8)),
                              error: { FeedError(.malformedJSON, $0, at: SourcePosition(byteOffset: 0, line: 1, column: 1)) })
        }
        #expect(shaped.map { String(decoding: $0, as: UTF8.self) } == #"{"@key":"\ud800","t":1}"#)
        #expect(throws: FeedError.self) { try JSONValue.parse(shaped ?? []) }
    }
}

/// A small deterministic generator for the mutation test.
struct SeededRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(max(bound, 1)))
    }
}
