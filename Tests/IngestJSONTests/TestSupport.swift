import Foundation
import IngestTestSupport
import Testing
@testable import IngestJSON

/// Paths and helpers shared by the tests.
enum Fixtures {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/feeds").path

    static func path(_ name: String) -> String { root + "/" + name }

    static func bytes(_ name: String) throws -> [UInt8] { try FileOps.readFile(path(name)) }
}

/// A record as the tests compare it: its text and where it started.
struct ReadRecord: Equatable, CustomStringConvertible {
    var text: String
    var offset: Int
    var description: String { "@\(offset) \(text)" }
}

/// Reads a whole feed from memory, `readSize` bytes per read.
func readRecords(_ bytes: [UInt8], shape: FeedShape = .array, readSize: Int = .max,
                 bufferSize: Int = 256 << 10, maxDepth: Int = 512, maxRecordBytes: Int = 64 << 20) throws -> [ReadRecord] {
    let options = FeedOptions(shape: shape, maxDepth: maxDepth, maxRecordBytes: maxRecordBytes, readBufferSize: bufferSize)
    let reader = FeedReader(source: MemoryByteSource(bytes, readSize: readSize), name: "test", options: options)
    var records: [ReadRecord] = []
    try reader.read { records.append(ReadRecord(text: String(decoding: $0.bytes, as: UTF8.self), offset: $0.byteOffset)) }
    return records
}

func readRecords(_ text: String, shape: FeedShape = .array, readSize: Int = .max) throws -> [ReadRecord] {
    try readRecords(Array(text.utf8), shape: shape, readSize: readSize)
}

/// The records a feed refuses for a limit (`FeedRecord.refusal`), by index, and how many it reads in all.
func refusedRecords(_ bytes: [UInt8], shape: FeedShape = .array, readSize: Int = .max,
                    maxDepth: Int = 512, maxRecordBytes: Int = 64 << 20) throws -> (refused: [Int: FeedError], records: Int) {
    let options = FeedOptions(shape: shape, maxDepth: maxDepth, maxRecordBytes: maxRecordBytes)
    let reader = FeedReader(source: MemoryByteSource(bytes, readSize: readSize), name: "test", options: options)
    var refused: [Int: FeedError] = [:]
    var records = 0
    try reader.read { record in
        records += 1
        if let refusal = record.refusal {
            #expect(record.bytes.isEmpty)
            refused[record.index] = refusal
        }
    }
    return (refused, records)
}

/// The error a feed gives, or nil when it reads cleanly.
func feedError(_ bytes: [UInt8], shape: FeedShape = .array, readSize: Int = .max,
               maxDepth: Int = 512, maxRecordBytes: Int = 64 << 20) -> FeedError? {
    do {
        _ = try readRecords(bytes, shape: shape, readSize: readSize, maxDepth: maxDepth, maxRecordBytes: maxRecordBytes)
        return nil
    } catch let error as FeedError {
        return error
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}
