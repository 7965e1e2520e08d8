import Testing
@testable import IngestJSON

/// Records must not depend on where the input is cut: every read size from 1 to 64
/// bytes gives exactly the records (text and offsets) of one large read.
@Suite struct FeedReaderBufferTests {
    static let feeds: [(String, FeedShape)] = [
        ("photos-10.json", .array),
        ("photos-10.ndjson", .ndjson),
        ("geojson.json", .keyPath(["features"])),
        ("nested-items.json", .keyPath(["data", "items"])),
        ("records.ndjson", .ndjson),
        ("pretty.json", .array),
        ("numbers.json", .array),
        ("bom.json", .array),
        ("empty-array.json", .array),
    ]

    @Test(arguments: feeds)
    func everyReadSizeGivesTheRecordsOfOneLargeRead(_ name: String, _ shape: FeedShape) throws {
        let bytes = try Fixtures.bytes(name)
        let reference = try readRecords(bytes, shape: shape)
        for size in 1...64 {
            let cut = try readRecords(bytes, shape: shape, readSize: size)
            #expect(cut == reference, "read size \(size)")
            let smallBuffer = try readRecords(bytes, shape: shape, bufferSize: size)
            #expect(smallBuffer == reference, "buffer size \(size)")
        }
    }

    @Test func arrayRecordsAreTheExactBytesOfTheFeed() throws {
        let records = try readRecords(Fixtures.bytes("pretty.json"))
        #expect(records.map(\.text) == [
            """
            {
                "id": "p1",
                "title": "Spaces   inside strings stay",
                "tags": [
                  "a",
                  "b"
                ],
                "nested": { "deep": [ 1, 2.50, -0.0 ] }
              }
            """,
            #"{"id": "p2", "title": "already compact"}"#,
            #""a bare string record""#,
            "12345678901234567890123",
            "null",
            "[ true, false ]",
        ])
        #expect(records.map(\.offset) == [4, 160, 204, 230, 257, 265])
    }

    @Test func keyPathRecordsComeFromTheNamedArrayOnly() throws {
        let features = try readRecords(Fixtures.bytes("geojson.json"), shape: .keyPath(["features"]))
        #expect(features.count == 3)
        #expect(features[1].text.contains("東京"))
        let items = try readRecords(Fixtures.bytes("nested-items.json"), shape: .keyPath(["data", "items"]))
        #expect(items.map(\.text) == [#"{"id": "a"}"#, #"{"id": "b"}"#, #"{"id": "c"}"#])
    }

    @Test func ndjsonSkipsBlankLinesAndAcceptsAnyValue() throws {
        let records = try readRecords(Fixtures.bytes("records.ndjson"), shape: .ndjson)
        #expect(records.map(\.text) == [
            #"{"id":1,"title":"one"}"#, #"{"id":2,"title":"two"}"#, #"{"id":3,"title":"three"}"#,
            "42", #""a string record""#,
        ])
    }

    @Test func ndjsonLastLineNeedsNoNewline() throws {
        #expect(try readRecords("{\"a\":1}\n7", shape: .ndjson, readSize: 1).map(\.text) == [#"{"a":1}"#, "7"])
    }

    @Test func byteOrderMarkIsSkippedButCountsInOffsets() throws {
        let records = try readRecords(Fixtures.bytes("bom.json"), readSize: 1)
        #expect(records == [ReadRecord(text: #"{"id":"bom"}"#, offset: 4)])
        // Bytes that only begin like a byte-order mark are input like any other.
        let error = feedError([0xEF, 0xBB, 0x5B, 0x5D], readSize: 1)
        #expect(error?.kind == .invalidUTF8)
        #expect(error?.position.byteOffset == 0)
    }
}

/// A source that counts its reads.
private final class CountingSource: ByteSource {
    var inner: MemoryByteSource
    var reads = 0
    init(_ bytes: [UInt8]) { inner = MemoryByteSource(bytes) }
    var totalBytes: Int? { inner.totalBytes }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        reads += 1
        return try inner.read(into: buffer)
    }
}

extension FeedReaderBufferTests {
    /// yajl looks again at a token it holds on every call it gets: a 16 MiB string fed
    /// 256 KiB at a time would be read quadratically. The buffer doubles once a record
    /// passes 1 MiB, so such a record takes a few reads, and comes out whole.
    @Test func aHugeRecordIsReadInGrowingBuffers() throws {
        let text = String(repeating: "y", count: 16 << 20)
        let bytes = Array(#"[{"id":1,"s":"\#(text)"},{"id":2}]"#.utf8)
        let source = CountingSource(bytes)
        let reader = FeedReader(source: source, name: "huge", options: FeedOptions(maxRecordBytes: 64 << 20))
        var lengths: [Int] = []
        try reader.read { lengths.append($0.bytes.count) }
        #expect(lengths == [text.utf8.count + 15, 8])
        #expect(source.reads < 16, "\(source.reads) reads for \(bytes.count) bytes (64 with a fixed 256 KiB buffer)")
    }
}
