#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization

/// The splitter's second thread: hashes and writes chunk bytes, and commits each
/// finished chunk (flush, rename into place, journal line). Parsing and writing then
/// overlap on two cores, and a chunk is in place before it is announced.
///
/// Every stored property below `queue` is touched only on `queue`; the methods
/// called from the parsing thread only enqueue work, at most 8 blocks of 256 KiB
/// (`inFlight`), so memory stays flat when the disk is slower than the parser.
final class ChunkCommitter: @unchecked Sendable {
    private let queue = DispatchQueue(label: "ingest.split.committer")
    private let inFlight = DispatchSemaphore(value: 8)
    private let failure = Mutex<(any Error)?>(nil)
    /// Blocks the writer is done with, for the parser to fill again. Fresh 256 KiB
    /// arrays come from mmap and cost a page fault and a zeroed page per 4 KiB;
    /// recycled ones cost nothing.
    private let spareBlocks = Mutex<[[UInt8]]>([])
    static let blockSize = 256 << 10

    private let directory: String
    private let journalPath: String
    private let onCommit: (@Sendable (ChunkInfo, Bool) -> Void)?
    /// Given, each chunk's bytes are kept while it is written and handed over with it.
    private let onCommitBytes: (@Sendable (ChunkInfo, Bool, [UInt8]) -> Void)?
    /// What makes `onCommitBytes`'s bytes of each chunk's blocks (made on `queue`).
    private let makeEncoder: @Sendable () -> any ChunkEncoder
    private var encoder: (any ChunkEncoder)?
    /// Flush each chunk and journal line to the disk before announcing it (a split that
    /// must survive a power cut; not one whose chunks are only a local copy).
    private let durable: Bool
    /// Chunks already on disk from an earlier run: regenerated, hashed and compared, not written.
    private let existing: [ChunkInfo]

    private var journalFD: Int32 = -1
    private var chunkHasher = Checksum()
    private var chunkFD: Int32 = -1
    /// The current chunk's member ends file, and whether writing it failed.
    private var endsFD: Int32 = -1
    private var endsFailed = false
    /// Whether this split made the current chunk's member ends file (only then is it removed
    /// when it fails: a link of that name is not Ingest's).
    private var endsMade = false
    private var chunkBytes = 0
    private(set) var committed: [ChunkInfo] = []
    private(set) var written = 0

    init(directory: String, existing: [ChunkInfo], durable: Bool = true, onCommit: (@Sendable (ChunkInfo, Bool) -> Void)?,
         onCommitBytes: (@Sendable (ChunkInfo, Bool, [UInt8]) -> Void)? = nil,
         encoder: (@Sendable () -> any ChunkEncoder)? = nil) {
        self.directory = directory
        self.journalPath = directory + "/" + SplitJournal.fileName
        self.existing = existing
        self.durable = durable
        self.onCommit = onCommit
        self.onCommitBytes = onCommitBytes
        self.makeEncoder = encoder ?? { PlainChunkEncoder() }
    }

    deinit {
        if chunkFD >= 0 { _ = Glibc.close(chunkFD) }
        if endsFD >= 0 { _ = Glibc.close(endsFD) }
        if journalFD >= 0 { _ = Glibc.close(journalFD) }
    }

    /// The first error the committer met, if any; the splitter checks it between chunks.
    func checkFailure() throws {
        if let error = failure.withLock({ $0 }) { throw error }
    }

    private func enqueue(_ work: @escaping @Sendable (ChunkCommitter) throws -> Void) {
        inFlight.wait()
        queue.async { [self] in
            defer { inFlight.signal() }
            guard failure.withLock({ $0 == nil }) else { return }
            do {
                try work(self)
            } catch {
                failure.withLock { if $0 == nil { $0 = error } }
            }
        }
    }

    /// An empty array with room for a block, recycled when one is free.
    func emptyBlock() -> [UInt8] {
        if var block = spareBlocks.withLock({ $0.popLast() }) {
            block.removeAll(keepingCapacity: true)
            return block
        }
        var block: [UInt8] = []
        block.reserveCapacity(Self.blockSize)
        return block
    }

    private func recycle(_ block: [UInt8]) {
        spareBlocks.withLock { if $0.count < 16 { $0.append(block) } }
    }

    func startJournal(header: [UInt8], fresh: Bool) {
        enqueue { committer in
            let path = committer.journalPath
            if fresh { try FileOps.writeAtomically(header, to: path) }
            committer.journalFD = try FileOps.openForWriting(path, append: true)
        }
    }

    func beginChunk(_ index: Int) {
        enqueue { committer in
            committer.chunkHasher = Checksum()
            committer.chunkBytes = 0
            if committer.onCommitBytes != nil {
                if committer.encoder == nil { committer.encoder = committer.makeEncoder() }
                committer.encoder?.begin()
            }
            if index > committer.existing.count {
                committer.chunkFD = try FileOps.openForWriting(committer.temporaryPath(index))
            }
        }
    }

    func write(_ block: [UInt8]) {
        enqueue { committer in
            committer.chunkHasher.update(block)
            committer.chunkBytes += block.count
            if let encoder = committer.encoder { block.withUnsafeBytes { encoder.append($0) } }
            if committer.chunkFD >= 0 {
                try block.withUnsafeBytes {
                    try FileOps.writeAll(committer.chunkFD, $0, path: committer.temporaryPath(committer.committed.count + 1))
                }
            }
            committer.recycle(block)
        }
    }

    /// The next units of the current chunk's `MemberEnds`, written beside a chunk this split
    /// writes (and in place before the chunk is, so that whoever is told of it finds them).
    func writeEnds(_ units: [UInt16]) {
        enqueue { committer in
            let index = committer.committed.count + 1
            guard index > committer.existing.count, !committer.endsFailed else { return }
            let path = committer.directory + "/" + MemberEnds.fileName(for: index)
            do {
                if committer.endsFD < 0 {
                    committer.endsFD = try FileOps.openForWriting(path)
                    committer.endsMade = true
                }
                try units.withUnsafeBytes { try FileOps.writeAll(committer.endsFD, $0, path: path) }
            } catch {
                // The ends only spare the importer a scan: a chunk whose ends cannot be written
                // is scanned, and its run goes on.
                committer.endsFailed = true
            }
        }
    }

    /// `memberEnds`: the last units of the chunk's `MemberEnds` (see `writeEnds`); nil when
    /// the split writes none, and then no file of an earlier split is left to be taken for them.
    func endChunk(_ index: Int, firstRecord: Int, records: Int, memberEnds: [UInt16]? = nil) {
        if let memberEnds { writeEnds(memberEnds) }
        enqueue { committer in
            let digest = committer.chunkHasher.hex
            let info = ChunkInfo(index: index, firstRecord: firstRecord, records: records,
                                 byteSize: committer.chunkBytes, checksum: digest)
            if index <= committer.existing.count {
                guard committer.existing[index - 1] == info else {
                    throw SplitError.feedChanged(directory: committer.directory, chunk: info.file)
                }
            } else {
                committer.closeEnds(chunk: index, keep: memberEnds != nil)
                let temporary = committer.temporaryPath(index)
                if committer.durable { try FileOps.sync(committer.chunkFD, path: temporary) }
                try FileOps.close(committer.chunkFD, path: temporary)
                committer.chunkFD = -1
                try FileOps.rename(temporary, to: committer.directory + "/" + info.file)
                try SplitJournal.line(info).withUnsafeBytes {
                    try FileOps.writeAll(committer.journalFD, $0, path: committer.journalPath)
                }
                if committer.durable { try FileOps.sync(committer.journalFD, path: committer.journalPath) }
                committer.written += 1
            }
            committer.committed.append(info)
            committer.onCommit?(info, index > committer.existing.count)
            if let onCommitBytes = committer.onCommitBytes, let encoder = committer.encoder {
                onCommitBytes(info, index > committer.existing.count, try encoder.finish())
            }
        }
    }

    /// Waits for all queued work.
    /// - Throws: the first error any queued work met.
    func finish() throws {
        enqueue { committer in
            if committer.journalFD >= 0 {
                try FileOps.close(committer.journalFD, path: committer.journalPath)
                committer.journalFD = -1
            }
        }
        queue.sync {}
        try checkFailure()
    }

    /// Drops the chunk being written when the split stops partway through it: its
    /// records were never complete, and no file may look as if they were.
    func abandon() {
        queue.sync {
            if chunkFD >= 0 {
                _ = Glibc.close(chunkFD)
                chunkFD = -1
                _ = unlink(temporaryPath(committed.count + 1))
            }
            if endsFD >= 0 { closeEnds(chunk: committed.count + 1, keep: false) }
        }
    }

    /// Ends the chunk's member ends file: kept when it was written whole, else removed.
    private func closeEnds(chunk index: Int, keep: Bool) {
        if endsFD >= 0 {
            if Glibc.close(endsFD) != 0 { endsFailed = true }
            endsFD = -1
        }
        if !keep || endsFailed {
            // An earlier split's ends file for this chunk would describe other bytes: it goes too.
            let path = directory + "/" + MemberEnds.fileName(for: index)
            if endsMade { _ = unlink(path) } else { try? FileOps.removeRegularFile(path) }
        }
        endsFailed = false
        endsMade = false
    }

    private func temporaryPath(_ index: Int) -> String {
        directory + "/." + ChunkInfo.fileName(for: index) + ".tmp"
    }

    /// Whether `name` is a temporary chunk file as `temporaryPath` names them.
    static func isTemporaryChunk(_ name: String) -> Bool {
        name.hasPrefix(".") && name.hasSuffix(".tmp") && ChunkInfo.index(inFileName: String(name.dropFirst().dropLast(4))) != nil
    }
}
