import Foundation
import IngestJSON
import IngestStore

/// The resume marker, in store metadata: which feed and pipeline the store is being
/// filled from, and per chunk how many of its records are done. Each worker's save
/// writes its chunk's count in the same transaction as the rows it covers, so after a
/// crash the marker says exactly what the store holds.
enum ImportMarker {
    static let identityKey = "ingest.import"
    /// Where the import's inputs are, for `ingest resume` (informative: moving them is allowed).
    static let runKey = "ingest.run"
    static let chunkPrefix = "ingest.chunk."
    static let rejectPrefix = "ingest.reject."

    struct Identity: Codable, Equatable {
        var feedByteSize: Int
        var feedChecksum: String
        var pipelineSHA256: String
        var chunks: Int
        var chunkSize: Int

        init(feedByteSize: Int, feedChecksum: String, pipelineSHA256: String, chunks: Int, chunkSize: Int) {
            self.feedByteSize = feedByteSize
            self.feedChecksum = feedChecksum
            self.pipelineSHA256 = pipelineSHA256
            self.chunks = chunks
            self.chunkSize = chunkSize
        }

        /// A store filled by an earlier version recorded the feed's SHA-256 instead: it reads
        /// as "no checksum yet", and its chunk directory is refused as an earlier version's.
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            feedByteSize = try container.decode(Int.self, forKey: .feedByteSize)
            feedChecksum = try container.decodeIfPresent(String.self, forKey: .feedChecksum) ?? ""
            pipelineSHA256 = try container.decode(String.self, forKey: .pipelineSHA256)
            chunks = try container.decode(Int.self, forKey: .chunks)
            chunkSize = try container.decode(Int.self, forKey: .chunkSize)
        }
    }

    struct Run: Codable, Equatable {
        var feed: String
        var pipeline: String?
        var chunks: String
        var saveEvery: Int?
    }

    /// A rejected record, kept in the store until the rejects file is written.
    struct Reject: Codable, Equatable {
        var chunk: Int
        var index: Int
        var record: Int
        var reason: String
        var text: String

        /// Record `index` of `chunk`, rejected for `reason`.
        init(_ chunk: ChunkInfo, index: Int, reason: String, text: String) {
            self.chunk = chunk.index
            self.index = index
            record = chunk.firstRecord + index
            self.reason = reason
            self.text = text
        }
    }

    static func chunkKey(_ chunk: Int) -> String { chunkPrefix + ChunkInfo.fileName(for: chunk) }

    static func rejectKey(chunk: Int, index: Int) -> String {
        rejectPrefix + ChunkInfo.fileName(for: chunk) + "." + String(repeating: "0", count: max(0, 6 - String(index).count)) + String(index)
    }

    /// Records done per chunk, from the store.
    static func progress(_ coordinator: PersistentStoreCoordinator) throws -> [Int: Int] {
        var done: [Int: Int] = [:]
        for (key, value) in try coordinator.metadata(withPrefix: chunkPrefix) {
            guard let chunk = ChunkInfo.index(inFileName: String(key.dropFirst(chunkPrefix.count))),
                  let count = Int(value) else { continue }
            done[chunk] = count
        }
        return done
    }

    static func rejects(_ coordinator: PersistentStoreCoordinator) throws -> [Reject] {
        let decoder = JSONDecoder()
        return try coordinator.metadata(withPrefix: rejectPrefix).sorted { $0.key < $1.key }.map {
            try decoder.decode(Reject.self, from: Data($0.value.utf8))
        }
    }
}

/// Why an import cannot start or go on.
public struct ImportError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
