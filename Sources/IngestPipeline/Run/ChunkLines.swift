#if canImport(Glibc)
import Glibc
#endif
import IngestJSON

/// The records of a chunk's bytes: one per line, as the split wrote and validated them.
enum ChunkLines {
    /// Calls `body` with the byte range and index of each record from index `skip` on.
    static func forEach(in bytes: [UInt8], from skip: Int, _ body: (Range<Int>, Int) throws -> Void) rethrows {
        var lines = Iterator(bytes: bytes, skip: skip)
        while let (range, index) = lines.next() { try body(range, index) }
    }

    /// The records' byte ranges and indexes, from index `skip` on.
    struct Iterator {
        let bytes: [UInt8]
        let skip: Int
        private var start = 0
        private var index = 0

        init(bytes: [UInt8], skip: Int) {
            self.bytes = bytes
            self.skip = skip
        }

        mutating func next() -> (Range<Int>, Int)? {
            while start < bytes.count {
                let from = start
                let end = bytes.withUnsafeBytes { buffer -> Int in
                    guard let newline = memchr(buffer.baseAddress! + from, 0x0A, buffer.count - from) else { return buffer.count }
                    return buffer.baseAddress!.distance(to: UnsafeRawPointer(newline))
                }
                let current = index
                start = end + 1
                index += 1
                if current >= skip { return (from..<end, current) }
            }
            return nil
        }
    }

    /// The text of record `index` (rejects are rare: found by counting lines).
    static func text(ofRecord index: Int, in bytes: [UInt8]) -> String {
        var line = 0
        var start = 0
        for position in bytes.indices where bytes[position] == 0x0A {
            if line == index { return String(decoding: bytes[start..<position], as: UTF8.self) }
            line += 1
            start = position + 1
        }
        return line == index ? String(decoding: bytes[start...], as: UTF8.self) : ""
    }
}

extension RowMapper {
    /// Maps the record at `range` into `request`; returns why it cannot be mapped (it is
    /// then left out), or nil.
    /// - Throws: what the mapper throws other than a record's own problem.
    func add(record range: Range<Int>, number: Int, memberEnds: RecordEnds? = nil,
             to request: inout BatchInsertRequest, reason: inout String?) throws {
        do {
            try add(record: range, number: number, memberEnds: memberEnds, to: &request)
            reason = nil
        } catch let error as CoercionError {
            reason = error.message
        } catch let error as FeedError {
            reason = error.message
        }
    }
}

import IngestStore
