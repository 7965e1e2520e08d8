import Foundation
import Synchronization

/// Asks a running split to stop at the next chunk boundary; safe from any thread
/// (a signal handler's watcher, a progress callback, a test).
package final class SplitCancellation: Sendable {
    private let flag = Atomic<Bool>(false)

    package init() {}

    package func cancel() { flag.store(true, ordering: .relaxed) }

    package var isCancelled: Bool { flag.load(ordering: .relaxed) }
}

/// How to split: the feed's shape and limits, and records per chunk.
package struct SplitOptions: Sendable {
    package var feed: FeedOptions
    /// Records per chunk file.
    package var chunkSize: Int
    /// Start over in a directory that holds another split.
    package var force: Bool
    /// What the records are: objects, or rows to name (see `RecordForm`).
    package var form: RecordForm
    /// Flush every chunk file to the disk before it is announced (the default). Off for
    /// chunks that are only a local copy of what is kept elsewhere (a PostgreSQL run's).
    package var durable = true
    /// Use a finished split's chunks without reading the feed: for a run whose feed was read
    /// once (standard input, a pipe) and cannot be read again. Its chunks' checksums, in
    /// the manifest, stand for the feed; the run checks each chunk against its own.
    /// - Throws (from `Splitter.run`): `SplitError.chunksMissing` when a chunk is not in place.
    package var withoutFeed = false
    /// With `withoutFeed`: the records of each chunk imported already. A chunk imported whole
    /// needs no file.
    package var recordsDone: [Int: Int] = [:]
    /// Write each chunk's `MemberEnds` beside it, for an importer in this process.
    package var writesMemberEnds = false

    package static let defaultChunkSize = 5_000

    package init(feed: FeedOptions = FeedOptions(), chunkSize: Int = SplitOptions.defaultChunkSize, force: Bool = false,
                form: RecordForm = .objects) {
        self.feed = feed
        self.chunkSize = chunkSize
        self.force = force
        self.form = form
    }
}

/// How far a split has come, for progress displays.
package struct SplitProgress: Sendable {
    package var bytesRead: Int
    package var totalBytes: Int?
    package var records: Int
}

/// What a split did.
package struct SplitReport: Sendable {
    package var manifest: SplitManifest
    /// Chunk files written by this run.
    package var chunksWritten: Int
    /// Chunk files an earlier, interrupted run had written and this one kept.
    package var chunksReused: Int
    /// The directory already held a complete split of this feed; nothing was written.
    package var alreadyComplete: Bool
    /// Records over the size or depth limit, written as rows the importer rejects
    /// (`FeedRecord.refusal`), by this run.
    package var refused = 0
}

/// Splits a feed into numbered chunk files of N records each, plus `manifest.json`.
///
/// Each chunk is written under a temporary name, flushed, renamed into place and only
/// then recorded in the directory's journal, so a split stopped at any moment leaves
/// only complete chunks, and running it again continues after the last of them.
/// The manifest is written last: its presence means the split is complete.
package final class Splitter {
    package let feedPath: String
    package let directory: String
    /// Where a feed over HTTP is kept as it arrives (`HTTPByteSource`'s spool and validators):
    /// the chunk directory unless set. A PostgreSQL split sets one that outlives its temporary
    /// chunk directory, so a resumed split asks the server only for the rest.
    package var spoolDirectory: String?
    private var spoolIn: String { spoolDirectory ?? directory }
    package let options: SplitOptions
    /// Called on the splitting thread after each block of input.
    package var onProgress: ((SplitProgress) -> Void)?
    /// Called, in order, as each chunk file is in place (on the writer thread), with
    /// true when this run wrote it (its checksum is of the bytes just written) and false
    /// for a chunk kept from an earlier run (its file was not read back).
    package var onChunk: (@Sendable (ChunkInfo, _ written: Bool) -> Void)?
    /// As `onChunk`, with the chunk's bytes as `chunkEncoder` made them while the chunk was
    /// written, for a caller that sends each chunk on: it need not read the file back.
    package var onChunkBytes: (@Sendable (ChunkInfo, _ written: Bool, _ bytes: [UInt8]) -> Void)?
    /// Makes the encoder of the bytes `onChunkBytes` is handed (by default, the chunk's bytes as they are).
    package var chunkEncoder: (@Sendable () -> any ChunkEncoder)?
    /// Cancel it to stop after the chunk being written; `run()` then throws `SplitError.interrupted`.
    package let cancellation = SplitCancellation()
    /// Tests stop the split here, at a known chunk, as a crash or Ctrl-C might.
    var stopAfterChunks: Int?

    private static let headSize = 1 << 20

    package init(feedPath: String, directory: String, options: SplitOptions = SplitOptions()) {
        self.feedPath = feedPath
        self.directory = directory
        self.options = options
    }

    /// Keyed records and rows are rewritten as they are written; plain objects are copied.
    private func record(needsShaping options: SplitOptions) -> Bool {
        if case .keyed = options.feed.shape { return true }
        return options.form != .objects
    }

    private var manifestPath: String { directory + "/" + SplitManifest.fileName }
    private var journalPath: String { directory + "/" + SplitJournal.fileName }

    /// Whether a file in a chunk directory is the split's own: a chunk, its member ends, the manifest or the journal.
    package static func isSplitFile(_ name: String) -> Bool {
        ChunkInfo.index(inFileName: name) != nil || MemberEnds.index(inFileName: name) != nil
            || name == SplitManifest.fileName || name == SplitJournal.fileName
            || name == HTTPByteSource.spoolName || name == HTTPByteSource.validatorsName
    }

    /// Splits the feed, or continues an interrupted split of it.
    /// - Throws: `FeedError` for bad input (nothing after the last complete chunk is
    ///   kept); `SplitError` when the directory belongs to another feed; `IOError`
    ///   when a file cannot be read or written.
    package func run() throws -> SplitReport {
        guard options.chunkSize >= 1 else { throw SplitError.invalidOption("the chunk size must be at least 1") }
        try FileOps.makeDirectory(directory)
        let entries = try FileOps.contents(of: directory)
        // Only the temporary chunk files a split makes, by their exact names: other `*.tmp`
        // files in the directory are the user's.
        for name in entries where ChunkCommitter.isTemporaryChunk(name) { try FileOps.removeRegularFile(directory + "/" + name) }
        // And those of its journal and manifest that a split killed before their rename left
        // (a test killing splits under load once saw a resumed directory differ from a clean one).
        for name in entries where [SplitJournal.fileName, SplitManifest.fileName, HTTPByteSource.validatorsName].contains(where: { FileOps.isLeftoverTemporary(name, of: $0) }) {
            try FileOps.removeRegularFile(directory + "/" + name)
        }
        if let spoolDirectory, HTTPByteSource.isURL(feedPath) {
            for name in try FileOps.contents(of: spoolDirectory) where FileOps.isLeftoverTemporary(name, of: HTTPByteSource.validatorsName) {
                try FileOps.removeRegularFile(spoolDirectory + "/" + name)
            }
        }
        if options.force {
            for name in entries where Self.isSplitFile(name) { try FileOps.removeRegularFile(directory + "/" + name) }
        }

        if options.withoutFeed { return try finishedSplit() }
        let cancellation = self.cancellation
        // A feed over HTTP is kept in the chunk directory as it arrives: a resumed split reads
        // it from there and asks the server only for the rest.
        let spool = HTTPByteSource.isURL(feedPath) ? spoolIn + "/" + HTTPByteSource.spoolName : nil
        let reader = try FeedReader(path: feedPath, options: options.feed, spool: spool, isCancelled: { cancellation.isCancelled })
        let identity = FeedIdentity(path: feedPath, byteSize: reader.totalBytes, checksum: nil,
                                    headChecksum: FileOps.isReadOnce(feedPath) ? nil : try Self.headHash(feedPath, spoolDirectory: spoolIn))
        let header = SplitJournal.Header(formatVersion: SplitManifest.currentFormatVersion, feed: identity,
                                         shape: ShapeRecord(options.feed.shape), chunkSize: options.chunkSize)
        var existing: [ChunkInfo] = []
        var freshJournal = true

        if let manifest = try SplitManifest.load(fromDirectory: directory) {
            try checkSameFeed(recorded: manifest.feed, shape: manifest.shape, chunkSize: manifest.chunkSize, current: header)
            existing = validPrefix(of: manifest.chunks)
            if existing.count == manifest.chunks.count, !FileOps.isReadOnce(feedPath) {
                guard try Self.fullHash(feedPath, spoolDirectory: spoolIn) == manifest.feed.checksum else {
                    throw SplitError.differentFeed(directory: directory, reason: "its content differs from the feed that was split")
                }
                return SplitReport(manifest: manifest, chunksWritten: 0, chunksReused: existing.count, alreadyComplete: true)
            }
            // Some chunks went missing: rebuild the journal from the good ones and carry on.
            try FileOps.writeAtomically(SplitJournal.line(header) + existing.flatMap(SplitJournal.line), to: journalPath)
            try FileOps.remove(manifestPath)
            freshJournal = false
        } else if FileOps.fileSize(journalPath) != nil {
            let journal = try SplitJournal.load(from: journalPath)
            try checkSameFeed(recorded: journal.header.feed, shape: journal.header.shape,
                              chunkSize: journal.header.chunkSize, current: header)
            existing = validPrefix(of: journal.chunks)
            if existing.count < journal.chunks.count {
                try FileOps.writeAtomically(SplitJournal.line(journal.header) + existing.flatMap(SplitJournal.line), to: journalPath)
            }
            freshJournal = false
        } else {
            let strays = entries.filter { ChunkInfo.index(inFileName: $0) != nil }
            if !strays.isEmpty && !options.force {
                throw SplitError.unknownChunks(directory: directory, count: strays.count)
            }
        }
        return try split(reader, header: header, existing: existing, freshJournal: freshJournal)
    }

    /// Checks, touching nothing, that `run()` may split into the directory: it is a directory
    /// (or not there yet), and holds no split of another feed, shape or chunk size, nor chunk
    /// files that no split of its own describes. An importer calls it before it records a run.
    /// - Throws: `IOError` (ENOTDIR) for a path that is not a directory; `SplitError` as `run()` would.
    package func checkDirectory() throws {
        var info = stat()
        guard stat(directory, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw IOError(errno: ENOTDIR, operation: "use as a directory", path: directory) }
        guard !options.force, !options.withoutFeed, !FileOps.isReadOnce(feedPath) else { return }
        let reader = try FeedReader(path: feedPath, options: options.feed)
        let current = SplitJournal.Header(
            formatVersion: SplitManifest.currentFormatVersion,
            feed: FeedIdentity(path: feedPath, byteSize: reader.totalBytes, checksum: nil, headChecksum: try Self.headHash(feedPath, spoolDirectory: spoolIn)),
            shape: ShapeRecord(options.feed.shape), chunkSize: options.chunkSize)
        if let manifest = try SplitManifest.load(fromDirectory: directory) {
            try checkSameFeed(recorded: manifest.feed, shape: manifest.shape, chunkSize: manifest.chunkSize, current: current)
        } else if FileOps.fileSize(journalPath) != nil {
            let journal = try SplitJournal.load(from: journalPath)
            try checkSameFeed(recorded: journal.header.feed, shape: journal.header.shape, chunkSize: journal.header.chunkSize, current: current)
        } else {
            let strays = try FileOps.contents(of: directory).filter { ChunkInfo.index(inFileName: $0) != nil }
            if !strays.isEmpty { throw SplitError.unknownChunks(directory: directory, count: strays.count) }
        }
    }

    private func split(_ reader: FeedReader, header: SplitJournal.Header, existing: [ChunkInfo],
                       freshJournal: Bool) throws -> SplitReport {
        let committer = ChunkCommitter(directory: directory, existing: existing, durable: options.durable, onCommit: onChunk,
                                       onCommitBytes: onChunkBytes, encoder: chunkEncoder)
        committer.startJournal(header: SplitJournal.line(header), fresh: freshJournal)
        let cursor = SplitCursor(block: committer.emptyBlock())
        let chunkSize = options.chunkSize
        let total = reader.totalBytes
        var shaper = RecordShaper(form: options.form)
        shaper.maxDepth = options.feed.maxDepth
        let reshapes = record(needsShaping: options)
        // Rewritten records have other offsets than the feed's: their chunks get no ends.
        reader.collectsMemberEnds = options.writesMemberEnds && !reshapes
        let ends = reader.collectsMemberEnds ? MemberEndsWriter(committer: committer) : nil

        func endChunk(_ records: Int) throws {
            committer.write(cursor.block)
            cursor.block = committer.emptyBlock()
            committer.endChunk(cursor.chunkIndex, firstRecord: (cursor.chunkIndex - 1) * chunkSize, records: records, memberEnds: ends?.take())
            try committer.checkFailure()
        }

        do {
            try reader.read(onBuffer: { buffer in
                // Hashed here, from the read buffer: handing the writer's thread a copy cost more
                // than the hash (a copy of every byte, and a block grown to the read's size).
                cursor.feedHasher.update(buffer)
                cursor.bytesRead += buffer.count
                onProgress?(SplitProgress(bytesRead: cursor.bytesRead, totalBytes: total, records: cursor.recordsSeen))
            }, onRecord: { record in
                var shaped: [UInt8]?
                if let refusal = record.refusal {
                    cursor.refused += 1
                    shaped = try shaper.refusedRow(refusal, key: record.key, text: record.refusedText) { message in
                        FeedError(refusal.kind, "record \(record.index + 1): \(message)", at: refusal.position, source: feedPath)
                    }
                } else if reshapes {
                    do {
                        shaped = try shaper.shape(record) { message in
                            FeedError(.malformedJSON, "record \(record.index + 1): \(message)",
                                      at: SourcePosition.locate(byteOffset: record.byteOffset, inFeed: feedPath), source: feedPath)
                        }
                    } catch let error as FeedError where error.source.isEmpty {
                        // A header row parsed on its own (a lone surrogate, say): placed in the feed.
                        throw FeedError(error.kind, "record \(record.index + 1): \(error.message)",
                                        at: SourcePosition.locate(byteOffset: record.byteOffset + error.position.byteOffset, inFeed: feedPath),
                                        source: feedPath)
                    }
                    if shaped == nil { return }
                }
                if cursor.inChunk == 0 {
                    if cancellation.isCancelled || cursor.chunkIndex == stopAfterChunks {
                        throw SplitError.interrupted(directory: directory, chunks: cursor.chunkIndex)
                    }
                    cursor.chunkIndex += 1
                    committer.beginChunk(cursor.chunkIndex)
                }
                // A record that would overflow the block starts the next one: a block grown past its
                // capacity is copied into one of twice the size (kept by every block in flight).
                if !cursor.block.isEmpty, cursor.block.count + (shaped?.count ?? record.bytes.count) + 1 > ChunkCommitter.blockSize {
                    committer.write(cursor.block)
                    cursor.block = committer.emptyBlock()
                }
                // One entry of member ends per line: only a record written as the feed has it keeps its ends.
                if let shaped {
                    // Made by JSONValue's printer or from a record without line breaks: one line.
                    if shaped.contains(0x0A) || shaped.contains(0x0D) {
                        shaped.withUnsafeBytes { cursor.block.append(contentsOf: JSONText.compacted($0)) }
                    } else {
                        cursor.block.append(contentsOf: shaped)
                    }
                    ends?.append(nil, length: 0)
                } else if JSONText.containsLineBreak(record.bytes) {
                    cursor.block.append(contentsOf: JSONText.compacted(record.bytes))
                    ends?.append(nil, length: 0)
                } else {
                    cursor.block.append(contentsOf: record.bytes)
                    ends?.append(record.memberEnds, length: record.bytes.count)
                }
                cursor.block.append(UInt8(ascii: "\n"))
                cursor.inChunk += 1
                cursor.recordsSeen += 1
                if cursor.inChunk == chunkSize {
                    try endChunk(cursor.inChunk)
                    cursor.inChunk = 0
                }
            })
            if cursor.inChunk > 0 { try endChunk(cursor.inChunk) }
        } catch {
            // The committer's own failure is the cause when the parse stopped because of it.
            _ = try? committer.finish()
            committer.abandon()
            try committer.checkFailure()
            if error is ReadCancelled { throw SplitError.interrupted(directory: directory, chunks: committer.committed.count) }
            throw error
        }
        try committer.finish()
        let feedHash = cursor.feedHasher.hex
        let chunks = committer.committed

        for name in try FileOps.contents(of: directory) {
            if let index = ChunkInfo.index(inFileName: name) ?? MemberEnds.index(inFileName: name), index > chunks.count {
                try FileOps.removeRegularFile(directory + "/" + name)
            }
        }
        var feed = header.feed
        feed.byteSize = reader.bytesRead
        feed.checksum = feedHash
        let manifest = SplitManifest(formatVersion: SplitManifest.currentFormatVersion, feed: feed,
                                     shape: header.shape, chunkSize: header.chunkSize, chunks: chunks,
                                     totalRecords: reader.recordCount - shaper.consumed,
                                     outsideRecords: reader.membersOutsideRecords.isEmpty ? nil : reader.membersOutsideRecords)
        try FileOps.writeAtomically(Self.prettyJSON(manifest), to: manifestPath)
        try FileOps.remove(journalPath)
        try FileOps.syncDirectory(directory)
        return SplitReport(manifest: manifest, chunksWritten: committer.written,
                           chunksReused: chunks.count - committer.written, alreadyComplete: false, refused: cursor.refused)
    }

    // MARK: - The directory's earlier state

    /// The finished split in the directory, every chunk of it in place, for `withoutFeed`.
    private func finishedSplit() throws -> SplitReport {
        guard let manifest = try SplitManifest.load(fromDirectory: directory) else {
            throw SplitError.chunksMissing(directory: directory, files: [SplitManifest.fileName])
        }
        // Each chunk still to import, on its own (found by probing: the first missing file had
        // every file after it named, and a file of a chunk imported whole was asked for).
        let missing = manifest.chunks.filter { chunk in
            (options.recordsDone[chunk.index] ?? 0) < chunk.records && FileOps.fileSize(directory + "/" + chunk.file) != chunk.byteSize
        }
        guard missing.isEmpty else { throw SplitError.chunksMissing(directory: directory, files: missing.map(\.file)) }
        return SplitReport(manifest: manifest, chunksWritten: 0, chunksReused: manifest.chunks.count, alreadyComplete: true)
    }

    private func checkSameFeed(recorded: FeedIdentity, shape: ShapeRecord, chunkSize: Int,
                               current: SplitJournal.Header) throws {
        func refuse(_ reason: String) -> SplitError { .differentFeed(directory: directory, reason: reason) }
        if shape != current.shape {
            throw refuse("it was split as \(shape.shape?.description ?? shape.kind), not as \(options.feed.shape)")
        }
        if chunkSize != current.chunkSize {
            throw refuse("it was split in chunks of \(chunkSize) records, not \(current.chunkSize)")
        }
        if let was = recorded.byteSize, let now = current.feed.byteSize, was != now {
            throw refuse("the feed it was split from had \(was) bytes, this one has \(now)")
        }
        if let was = recorded.headChecksum, let now = current.feed.headChecksum, was != now {
            throw refuse("the feed's first bytes differ from those of the feed it was split from")
        }
    }

    /// The leading chunks whose files are still there at their recorded size.
    private func validPrefix(of chunks: [ChunkInfo]) -> [ChunkInfo] {
        var good: [ChunkInfo] = []
        for chunk in chunks {
            guard FileOps.fileSize(directory + "/" + chunk.file) == chunk.byteSize else { break }
            good.append(chunk)
        }
        return good
    }

    // MARK: - Hashing

    static func headHash(_ path: String, spoolDirectory: String? = nil) throws -> String {
        try hash(path, limit: headSize, spoolDirectory: spoolDirectory)
    }

    /// The `Checksum` of the whole file, in hex.
    /// - Throws: `IOError` when it cannot be read; `HTTPFeedError` for a feed over HTTP.
    package static func fullHash(_ path: String, spoolDirectory: String? = nil) throws -> String {
        try hash(path, limit: .max, spoolDirectory: spoolDirectory)
    }

    /// Hashes the feed's first `limit` bytes: for a feed over HTTP, from its spool in
    /// `spoolDirectory` when that holds them (all of the feed, or for a head at least
    /// `limit` bytes), else from the network.
    private static func hash(_ path: String, limit: Int, spoolDirectory: String?) throws -> String {
        var read = path
        if HTTPByteSource.isURL(path), let spoolDirectory, let kept = HTTPByteSource.spooled(in: spoolDirectory, url: path),
           kept.length >= limit || kept.size == kept.length {
            read = spoolDirectory + "/" + HTTPByteSource.spoolName
        }
        // Of the feed's JSON: a gzip feed's bytes after inflating, as the split hashes them.
        let source = try FeedByteSource(path: read)
        var hasher = Checksum()
        var remaining = limit
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while remaining > 0 {
            let n = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(buffer.count, remaining)]))
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            remaining -= n
        }
        return hasher.hex
    }

    static func prettyJSON<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value)) + [UInt8(ascii: "\n")]
    }
}
