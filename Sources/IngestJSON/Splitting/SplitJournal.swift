import Foundation

/// `split-journal.ndjson`: the record of a split in progress. Its first line says
/// which feed and options the directory belongs to; each further line is a chunk
/// that is complete on disk. A split that is stopped at any moment restarts from it.
/// It is removed once `manifest.json` is in place.
struct SplitJournal {
    static let fileName = "split-journal.ndjson"

    struct Header: Codable, Equatable {
        var formatVersion: Int
        var feed: FeedIdentity
        var shape: ShapeRecord
        var chunkSize: Int
    }

    var header: Header
    var chunks: [ChunkInfo]

    /// Reads a journal; a torn last line (the process died while appending) is ignored.
    /// - Throws: `SplitError.unreadableState` when the header cannot be read.
    static func load(from path: String) throws -> SplitJournal {
        let bytes = try FileOps.readFile(path)
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
        let decoder = JSONDecoder()
        guard let first = lines.first, let header = try? decoder.decode(Header.self, from: Data(first)) else {
            throw SplitError.unreadableState(path: path)
        }
        var chunks: [ChunkInfo] = []
        for line in lines.dropFirst() {
            guard let chunk = try? decoder.decode(ChunkInfo.self, from: Data(line)),
                  chunk.index == chunks.count + 1 else { break }
            chunks.append(chunk)
        }
        return SplitJournal(header: header, chunks: chunks)
    }

    static func line<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding these plain structs cannot fail.
        return Array(try! encoder.encode(value)) + [UInt8(ascii: "\n")]
    }
}
