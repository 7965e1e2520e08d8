import Foundation
import IngestJSON
import IngestStore
import Logging
import Synchronization

/// A PostgreSQL run's chunks, for one worker of one of the processes joined to it: each
/// claimed with `SELECT … FOR UPDATE SKIP LOCKED` under this worker's name, held by its
/// process's heartbeat, and read from this process's own chunk file when it split the
/// feed, else from the database. While the split goes on, or other processes hold the
/// last chunks, it waits; a split whose process died is taken over here when this
/// process can read the feed.
///
/// It waits on a notification, not a sleep: its connection LISTENs on `channel`, which a
/// split notifies in the transaction that registers a chunk and when it ends, fails or
/// stops, a process when it stores a kept chunk or gives chunks back, and on
/// `PostgresCommitTurns.channel` (a chunk finished). Each wait has a timeout, the interval
/// it used to poll at, for what sends no notification: a lease running out, a process gone.
final class PostgresChunkSource: ChunkSource {
    /// The channel notified when the run's chunks change for a waiting claim: one registered,
    /// stored or given back, or the split ended, failed or stopped.
    static let channel = "_ingest_chunks_changed"

    /// Notifies `channel` (at the commit of the transaction `connection` is in, if any).
    static func notify(_ connection: PostgresConnection) throws {
        try connection.execute("NOTIFY \(channel)")
    }

    /// The connection for claims and chunk bytes (the writer has its own).
    let connection: PostgresConnection
    /// The store's address (with its password, if it has one), for a split taken over.
    let url: PostgresURL
    let run: Int
    let record: PostgresRunRecord
    /// This worker's name on the chunks it claims: its process's ID, a slash, its number.
    let owner: String
    /// Where this process's own split left the chunk files, or nil.
    let localChunks: String?
    /// The split writing `localChunks`, when it runs in this process: a file whose checksum
    /// it stored (or found stored) under the same number is read without hashing it again.
    let localSplit: PostgresSplitStage?
    /// The importing process's chunk files, when this process reads the chunks it keeps there.
    let keptFiles: KeptChunkFiles?
    /// Feed order across the run's processes: a claimed chunk's saves wait for the chunks before it.
    let turns: PostgresCommitTurns?
    let logger: Logger

    /// The waits for a change, and those of them that a notification ended (for tests).
    let waits = Atomic<Int>(0)
    let notifiedWaits = Atomic<Int>(0)
    /// Multiplies every wait's timeout (tests make it long, to see that a notification ends it).
    let timeoutScale: Double
    private let listening = Flag()

    init(connection: PostgresConnection, url: PostgresURL, run: Int, record: PostgresRunRecord, owner: String,
         localChunks: String?, localSplit: PostgresSplitStage? = nil, keptFiles: KeptChunkFiles? = nil,
         turns: PostgresCommitTurns? = nil, timeoutScale: Double = 1, logger: Logger) {
        self.timeoutScale = timeoutScale
        self.connection = connection
        self.url = url
        self.run = run
        self.record = record
        self.owner = owner
        self.localChunks = localChunks
        self.localSplit = localSplit
        self.keptFiles = keptFiles
        self.turns = turns
        self.logger = logger
    }

    /// This worker's process: its name before the slash.
    private var process: String { String(owner[..<(owner.lastIndex(of: "/") ?? owner.endIndex)]) }

    /// Set when this worker gave a chunk back (`ChunkYielded`): before it claims again, it sees
    /// to the chunks nobody can claim (a gone keeper's), as it does when none is left to claim.
    private let gaveBack = Flag()
    /// The bytes of the last two chunks read from local files, read into again in turn
    /// (`FileOps.readFile(_:into:)`): the writer saves at most one batch behind the mapping,
    /// so the older one is free by the next read, and a fresh array of megabytes is fresh
    /// pages, a fault and a zeroed page per 4 KiB. Still held, one is left and a new one made.
    private var readBuffers: [[UInt8]] = [[], []]
    private var nextReadBuffer = 0

    func claim(until stop: () -> Bool) throws -> ClaimedChunk? {
        // Before the first look at the chunks: a change after it wakes the wait that follows.
        if !listening.value.exchange(true, ordering: .relaxed) {
            try connection.execute("LISTEN \(Self.channel)")
            try connection.execute("LISTEN \(PostgresCommitTurns.channel)")
        }
        if gaveBack.value.exchange(false, ordering: .relaxed), try !moreChunksMayCome() { return nil }
        while !stop() {
            // Notifications up to this look at the chunks are answered by it: dropped, so that
            // a worker that never waits does not pile them up in libpq (no wait, a poll(2) of 0).
            _ = try connection.waitForNotification(seconds: 0)
            guard let lease = try ChunkLease.claim(run: run, owner: owner, leaseSeconds: record.leaseSeconds,
                                                   keptUpTo: localSplit?.lastWritten.withLock { $0 } ?? (keptFiles?.isReading == true ? Int(Int32.max) : 0),
                                                   connection) else {
                if try !moreChunksMayCome() { return nil }
                continue
            }
            logger.debug("chunk claimed", metadata: ["chunk": "\(lease.number)", "done": "\(lease.done)", "records": "\(lease.records)"])
            let started = StageTimes.now()
            do {
                let (bytes, ends) = try bytes(of: lease)
                var claimed = ClaimedChunk(info: lease.chunk(byteSize: bytes.count), bytes: bytes, memberEndsFile: ends, done: lease.done,
                                           readSeconds: StageTimes.now() - started)
                if let turns {
                    let (number, owner) = (lease.number, owner)
                    let gaveBack = self.gaveBack
                    claimed.waitForTurn = {
                        do {
                            try turns.waitForTurn(number, owner: owner)
                        } catch let yielded as ChunkYielded {
                            gaveBack.value.store(true, ordering: .relaxed)
                            throw yielded
                        }
                    }
                }
                return claimed
            } catch is ChunkTakenOver {
                continue
            } catch is ChunkNotStored {
                // Kept by the process that split it, which stores it when it can: given back.
                try connection.execute("""
                    UPDATE _ingest_chunks SET owner = NULL, lease_until = NULL
                    WHERE run = $1 AND number = $2 AND owner = $3 AND finished IS NULL
                    """, [String(run), String(lease.number), owner])
                // Until the keeper stores a chunk (it notifies), or a moment.
                try waitForChange(seconds: 0.1)
                continue
            }
        }
        return nil
    }

    /// Waits up to `seconds` (times `timeoutScale`) for a notification on the channels the
    /// connection LISTENs on. Notifications that came meanwhile (during claims) end it at once.
    private func waitForChange(seconds: Double) throws {
        waits.add(1, ordering: .relaxed)
        if try connection.waitForNotification(seconds: seconds * timeoutScale) {
            notifiedWaits.add(1, ordering: .relaxed)
        }
    }

    /// With no chunk to claim now: waits for a change (or a moment) and returns true when
    /// one may come (the split is still storing chunks, or another process holds some that
    /// it may give back when it dies), false when the run has none left for this process.
    /// - Throws: `ImportError` when the run's split failed or stopped, so no chunk will come.
    private func moreChunksMayCome() throws -> Bool {
        guard try ChunkLease.isRunning(run: run, connection) else { return false }
        // Chunks this process's own workers hold come back to none of them: they finish them,
        // or the process fails. Waiting on them (found by measuring) kept every import up to
        // a second past its last save, an eighth of a million-record run.
        if try ChunkLease.unfinished(run: run, notHeldBy: process, connection) > 0 {
            if localSplit == nil, try PostgresImport.keptChunks(run: run, connection) > 0,
               let (text, current) = try PostgresImport.storedRecord(of: run, connection) {
                // Read from the files: those the keeper held come back to a claim when its
                // lease ends, alive or not (found by review: a gone keeper's files were
                // passed over for a split made again, or an error).
                if keptFiles?.isReading == true {
                    try waitForChange(seconds: 0.1)
                    return true
                }
                // Chunks another process's split keeps: it stores some while this one waits for work.
                if try PostgresImport.keeperIsAlive(current, connection) {
                    try waitForChange(seconds: 0.1)
                    return true
                }
                // That process is gone: one that can read the feed splits it again, and stores them.
                if try takeOverSplit(current, stored: text) { return true }
                let files = current.splitDirectory.map { ", or ingest join \(ShellWord.quoted(connection.target)) where its chunk files in \($0) can be read" } ?? ""
                throw ImportError("run \(run)'s remaining chunks were kept by the process that split \(current.feed), which is gone, and are not stored in the database (this process cannot read that feed: it is not there, not a regular file, or not its size then); continue with: ingest import \(ShellWord.quoted(current.feed)) --store \(ShellWord.quoted(connection.target)) where that feed can be read\(files)")
            }
            // Held by other processes: they save them (a finished chunk notifies), give them back
            // (notified), or die and leave them to a claim when their leases run out (no notice).
            try waitForChange(seconds: min(0.2, record.leaseSeconds / 4))
            return true
        }
        guard let (text, current) = try PostgresImport.storedRecord(of: run, connection), !current.isSplit else { return false }
        if let failure = current.splitError {
            // The chunks split before the failure are imported first: this process's other
            // workers finish theirs, and the last to look finds none and says why the run stops.
            if try ChunkLease.unfinished(run: run, connection) > 0 { return false }
            throw ImportError("run \(run)'s split failed (\(failure)), so no more of its chunks will come")
        }
        if Date().timeIntervalSince1970 - (current.splitUpdated ?? 0) > current.leaseSeconds {
            // The splitting process is gone: a process that can read the feed takes the split over.
            if try takeOverSplit(current, stored: text) { return true }
            throw ImportError("run \(run)'s split stopped (the process splitting \(current.feed) is gone, and this one cannot read that feed); continue it with: ingest import \(ShellWord.quoted(current.feed)) --store \(ShellWord.quoted(connection.target))")
        }
        // The split is storing chunks: it notifies at each chunk's commit and at its end.
        try waitForChange(seconds: 0.05)
        return true
    }

    /// Splits the run's feed here when its split stopped (its process died) and this process
    /// can read the same feed: one process takes it over (compare-and-set on the run's
    /// record), stores the chunks the split had not stored yet, and goes back to importing.
    /// Returns false when the feed cannot be read here.
    private func takeOverSplit(_ current: PostgresRunRecord, stored before: String) throws -> Bool {
        // A feed over HTTP can be read from anywhere: its split checks the document's validators
        // (and on this machine continues the download the stopped split kept, `HTTPSpoolDirectory`).
        let readable = HTTPByteSource.isURL(current.feed)
            || !FileOps.isReadOnce(current.feed) && FileOps.fileSize(current.feed) == current.feedByteSize
        guard current.feed != "-", readable else { return false }
        var taken = current
        taken.splitUpdated = Date().timeIntervalSince1970
        // This process answers for the chunks the gone one kept until its split has stored them.
        taken.splitProcess = process
        // It stores every chunk it makes, from files of its own that go with it.
        taken.splitDirectory = nil
        let after = String(decoding: try JSONEncoder().encode(taken), as: UTF8.self)
        let claimed = try connection.execute("UPDATE _ingest_runs SET record = $3 WHERE run = $1 AND record = $2",
                                             [String(run), before, after]).changed == 1
        // Another process took it over first: its chunks are coming.
        guard claimed else { return true }
        logger.warning(current.isSplit ? "the process that kept this run's remaining chunks is gone; splitting the feed here to store them"
                                         : "the split of this run stopped with its process; splitting the feed here", metadata: ["feed": "\(current.feed)"])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-split-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            _ = try PostgresImport.split(feed: current.feed, run: run, url: url, directory: directory,
                                         options: PostgresImportOptions(leaseSeconds: current.leaseSeconds, logger: logger))
        } catch let error as FeedError {
            // The feed is malformed further on, as the first split found: the chunks before the
            // fault are stored now, to be imported; the run then says its split failed.
            logger.warning("the feed split here stops where it is malformed", metadata: ["error": "\(error)"])
        }
        return true
    }

    /// A local chunk file's bytes, nil when it cannot be read.
    private func readLocal(_ path: String) -> [UInt8]? {
        var bytes = readBuffers[nextReadBuffer]
        readBuffers[nextReadBuffer] = []
        guard (try? FileOps.readFile(path, into: &bytes)) != nil else { return nil }
        readBuffers[nextReadBuffer] = bytes
        nextReadBuffer = 1 - nextReadBuffer
        return bytes
    }

    /// A chunk's bytes: this process's own chunk file when it has one, else the database's
    /// copy; checked against the chunk's checksum either way. With them, the chunk's
    /// `MemberEnds` file when this process's split wrote the chunk (and so its ends).
    /// - Throws: `ChunkTakenOver` when the chunk was finished (its bytes dropped) meanwhile.
    private func bytes(of lease: ChunkLease) throws -> ([UInt8], String?) {
        let keptFile = keptFiles?.isReading == true ? keptFiles!.directory : nil
        let localFile = (localChunks ?? keptFile).map { $0 + "/" + ChunkInfo.fileName(for: lease.number) }
        if let localFile, let local = readLocal(localFile) {
            if let localSplit, localSplit.localSums.withLock({ $0[lease.number] }) == lease.checksum {
                let ends = localSplit.wroteFiles.withLock { $0.contains(lease.number) }
                    ? localChunks.map { $0 + "/" + MemberEnds.fileName(for: lease.number) } : nil
                return (local, ends)
            }
            if local.withUnsafeBytes({ Checksum.hex(of: $0) }) == lease.checksum { return (local, nil) }
        }
        guard let stored = try connection.fetchBytes("SELECT bytes FROM _ingest_chunks WHERE run = $1 AND number = $2",
                                                      [String(run), String(lease.number)]) else { throw ChunkTakenOver() }
        if stored.isEmpty {
            // Kept by this process, whose file is gone: nobody has the chunk until the feed is split again.
            if let localFile, let split = localSplit, lease.number <= split.lastWritten.withLock({ $0 }),
               try connection.execute("SELECT 1 FROM _ingest_chunks WHERE run = $1 AND number = $2 AND finished IS NULL",
                                      [String(run), String(lease.number)]).count == 1 {
                throw ImportError("chunk \(lease.number) of run \(run), kept by this process, is no longer in its chunk file \(localFile) as the split wrote it (removed or changed meanwhile); continue with: ingest join \(ShellWord.quoted(connection.target)) where \(record.feed) can be read")
            }
            // Not in the importing process's files as it registered it (another machine's directory,
            // or a split made again there): from here on this process asks for chunks stored.
            if keptFile != nil, let localFile { try keptFiles!.missed(lease.number, file: localFile, connection) }
            // Finished meanwhile (its bytes dropped), or kept by the process that split it.
            throw ChunkNotStored()
        }
        guard let bytes = ChunkCompression.decompress(stored), bytes.withUnsafeBytes({ Checksum.hex(of: $0) }) == lease.checksum else {
            // Not SQLite's advice (delete the file, resume): found by probing, it named neither.
            throw ImportError("chunk \(lease.number) of run \(run), as stored in \(connection.target), is not the chunk the split registered (its checksum differs): it was damaged in the database, or the chunk file it was stored from changed after the split; no process imports it as it is")
        }
        return (bytes, nil)
    }
}

/// A claimed chunk's bytes are not in the database: the process that split it keeps them
/// (or the chunk was finished meanwhile).
private struct ChunkNotStored: Error {}

/// A flag one thread sets and another takes.
private final class Flag: Sendable {
    let value = Atomic<Bool>(false)
}
