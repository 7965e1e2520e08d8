import Foundation
import IngestTestSupport
import Testing
@testable import IngestJSON

/// Gzip feeds stream through zlib: the same records as the plain feed, from a file or a
/// pipe, several members read as one, and a damaged stream named as such.
@Suite struct GzipFeedTests {
    func records(_ path: String, shape: FeedShape = .array) throws -> [String] {
        let reader = try FeedReader(path: path, options: FeedOptions(shape: shape))
        var records: [String] = []
        try reader.read { records.append(String(decoding: $0.bytes, as: UTF8.self)) }
        return records
    }

    func gzip(_ bytes: [UInt8], in dir: TemporaryDirectory, name: String) throws -> String {
        let plain = try dir.write(name, bytes)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-n", "-f", plain]
        try process.run()
        process.waitUntilExit()
        return plain + ".gz"
    }

    @Test func aGzipFeedReadsAsThePlainOne() throws {
        let plain = try records(Fixtures.path("photos-10.json"))
        #expect(plain.count == 10)
        #expect(try records(Fixtures.path("photos-10.json.gz")) == plain)
        #expect(try FeedByteSource(path: Fixtures.path("photos-10.json.gz")).isCompressed)
        #expect(try !FeedByteSource(path: Fixtures.path("photos-10.json")).isCompressed)
    }

    @Test func concatenatedMembersReadAsOneStream() throws {
        let dir = try TemporaryDirectory()
        let first = try gzip(Array("{\"a\":1}\n{\"a\":2}\n".utf8), in: dir, name: "one.ndjson")
        let second = try gzip(Array("{\"a\":3}\n".utf8), in: dir, name: "two.ndjson")
        let both = try FileOps.readFile(first) + FileOps.readFile(second)
        let joined = try dir.write("both.ndjson.gz", both)
        #expect(try records(joined, shape: .ndjson) == [#"{"a":1}"#, #"{"a":2}"#, #"{"a":3}"#])
    }

    @Test func aTruncatedOrDamagedStreamIsNamedAsSuch() throws {
        let dir = try TemporaryDirectory()
        let whole = try FileOps.readFile(Fixtures.path("photos-10.json.gz"))
        let truncated = try dir.write("cut.json.gz", Array(whole.prefix(whole.count / 2)))
        let cut = #expect(throws: CompressionError.self) { try records(truncated) }
        #expect(cut?.description.hasPrefix("\(truncated): the file ends inside a gzip member (truncated), at byte ") == true, "\(cut?.description ?? "")")
        var flipped = whole
        for index in 20..<60 { flipped[index] ^= 0x5A }
        let damaged = try dir.write("damaged.json.gz", flipped)
        let bad = #expect(throws: CompressionError.self) { try records(damaged) }
        #expect(bad?.description.contains(": the gzip data is damaged (") == true, "\(bad?.description ?? "")")
    }
}
