import Foundation

/// One chunk file: its place in the feed and what it must contain.
package struct ChunkInfo: Codable, Sendable, Equatable {
    /// 1-based chunk number; the file is `ChunkInfo.fileName(for:)`.
    package var index: Int
    package var file: String
    /// 0-based index of the chunk's first record in the feed.
    package var firstRecord: Int
    package var records: Int
    package var byteSize: Int
    /// XXH64 of the chunk file's bytes (`Checksum`), 16 lowercase hex digits.
    package var checksum: String

    package init(index: Int, firstRecord: Int, records: Int, byteSize: Int, checksum: String) {
        self.index = index
        self.file = Self.fileName(for: index)
        self.firstRecord = firstRecord
        self.records = records
        self.byteSize = byteSize
        self.checksum = checksum
    }

    /// `chunk-000001.ndjson`: six digits sort by name up to 999,999 chunks, and grow past that.
    package static func fileName(for index: Int) -> String {
        let digits = String(index)
        return "chunk-" + String(repeating: "0", count: max(0, 6 - digits.count)) + digits + ".ndjson"
    }

    /// The chunk number in a file name made by `fileName(for:)`, or nil for any other name.
    package static func index(inFileName name: String) -> Int? {
        guard name.hasPrefix("chunk-"), name.hasSuffix(".ndjson") else { return nil }
        let digits = name.dropFirst(6).dropLast(7)
        guard digits.count >= 6, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { return nil }
        return Int(digits)
    }
}

/// Which feed a chunk directory was made from.
package struct FeedIdentity: Codable, Sendable, Equatable {
    /// As the user named it ("-" for standard input); informative only, a feed may move.
    package var path: String
    /// Size in bytes; known up front for files, at the end for standard input.
    package var byteSize: Int?
    /// `Checksum` of the whole feed, known once it has been read to the end.
    package var checksum: String?
    /// `Checksum` of the feed's first MiB, to tell cheaply, before reading it all, that
    /// a feed is not the one a directory was made from.
    package var headChecksum: String?
}

/// How the feed's records were found, as recorded in a manifest.
package struct ShapeRecord: Codable, Sendable, Equatable {
    /// "array", "keyPath" or "ndjson".
    package var kind: String
    package var recordsAt: String?

    package init(_ shape: FeedShape) {
        switch shape {
        case .array: kind = "array"
        case .keyPath(let keys): kind = "keyPath"; recordsAt = keys.joined(separator: ".")
        case .ndjson: kind = "ndjson"
        case .keyed(let keys): kind = "keyed"; recordsAt = keys.joined(separator: ".")
        }
    }

    package var shape: FeedShape? {
        switch kind {
        case "array": .array
        case "ndjson": .ndjson
        case "keyPath": recordsAt.flatMap(FeedShape.recordsAt)
        case "keyed": recordsAt.map { $0.isEmpty ? .keyed([]) : .keyed($0.split(separator: ".").map(String.init)) }
        default: nil
        }
    }
}

/// `manifest.json`: written last, when every chunk is in place, so its presence
/// means the split is complete.
package struct SplitManifest: Codable, Sendable, Equatable {
    package static let currentFormatVersion = 2
    package static let fileName = "manifest.json"

    package var formatVersion: Int
    package var feed: FeedIdentity
    package var shape: ShapeRecord
    package var chunkSize: Int
    package var chunks: [ChunkInfo]
    package var totalRecords: Int
    /// Top-level members beside the records' key path, which the split does not carry
    /// into any chunk (nil when there are none): said, never dropped without a word.
    package var outsideRecords: [String]?

    /// The manifest of a finished split in `directory`, or nil when there is none.
    /// - Throws: `SplitError.unreadableState` for a manifest that is not one; `IOError`
    ///   when it cannot be read.
    /// Whether `directory` holds a finished split's manifest (without reading it).
    package static func isFinished(_ directory: String) -> Bool {
        FileOps.fileSize(directory + "/" + fileName) != nil
    }

    package static func load(fromDirectory directory: String) throws -> SplitManifest? {
        let path = directory + "/" + fileName
        guard FileOps.fileSize(path) != nil else { return nil }
        struct Version: Decodable { var formatVersion: Int }
        do {
            let data = Data(try FileOps.readFile(path))
            if let version = try? JSONDecoder().decode(Version.self, from: data), version.formatVersion < currentFormatVersion {
                throw SplitError.differentFeed(directory: directory,
                                               reason: "it was split by an earlier version of Ingest (format \(version.formatVersion), SHA-256 checksums)")
            }
            let manifest = try JSONDecoder().decode(SplitManifest.self, from: data)
            // A list edited short (chunks left out) would import fewer records without a word.
            guard manifest.addsUp else { throw SplitError.unreadableState(path: path) }
            return manifest
        } catch is DecodingError {
            throw SplitError.unreadableState(path: path)
        }
    }

    /// Whether the chunks are numbered 1, 2, 3 …, each begins where the one before ended,
    /// and their records add up to the total: as every split writes its manifest.
    var addsUp: Bool {
        var next = 0
        for (position, chunk) in chunks.enumerated() {
            guard chunk.index == position + 1, chunk.firstRecord == next, chunk.records > 0,
                  chunk.file == ChunkInfo.fileName(for: chunk.index) else { return false }
            next += chunk.records
        }
        return next == totalRecords
    }
}
