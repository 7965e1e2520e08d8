import Foundation
import IngestJSON
import IngestStore
import Logging

/// Stores the chunks a process's split keeps (`PostgresImport.split(keeping:)`) when other
/// processes want work: while some other live process is joined to the run, it keeps about
/// two stored, unclaimed chunks per worker of theirs, compressing and storing the next kept
/// chunks past the ones this process's own workers are about to take. An import no other
/// process joins stores no chunk bytes at all: compressing and storing them had cost about
/// a sixth of the client's and server's CPU per record, for copies only other machines read.
///
/// What this gives up: a kept chunk lives only in its process's chunk files (and in the
/// feed). When that process stops at a signal while others import, it stores what it kept
/// first (`storeKept`); when it dies, a process that can read the same feed takes the split
/// over and stores the kept chunks (`PostgresChunkSource`); one that cannot says where to
/// run `ingest join` or `ingest import` again.
final class ChunkUploader: Sendable {
    private let work: Work
    private let logger: Logger
    private let url: PostgresURL
    private let thread = ManagedThread(name: "ingest.upload")

    /// Stores `process`'s kept chunks of `run` from `directory` on demand, on a thread and
    /// connection of its own, once started (`start`). `sums` gives the checksum of each chunk file the
    /// split wrote (a file is stored only under the checksum its row holds); `lastWritten`
    /// the last chunk it wrote (every kept chunk up to it is in `directory`).
    init(url: PostgresURL, run: Int, process: String, directory: String, ownWorkers: Int, leaseSeconds: Double,
         sums: @escaping @Sendable (Int) -> String?, lastWritten: @escaping @Sendable () -> Int, logger: Logger) {
        let work = Work(run: run, process: process, directory: directory, ownWorkers: ownWorkers, leaseSeconds: leaseSeconds,
                        sums: sums, lastWritten: lastWritten)
        (self.work, self.logger, self.url) = (work, logger, url)
    }

    /// Starts storing on the uploader's thread.
    func start() {
        let (work, logger, url) = (work, logger, url)
        thread.start { stop in
            var connection: PostgresConnection?
            while !stop.isStopped {
                do {
                    if connection == nil || connection?.isOK == false {
                        connection = try PostgresConnection(url)
                        // A chunk's row locked by a save that stalls is passed over, not waited for.
                        try connection!.execute("SET lock_timeout = '1s'")
                    }
                    if try !work.storeOne(connection!) { stop.wait(seconds: 0.05) }
                } catch let error as PostgresError where error.sqlState == .lockNotAvailable {
                    continue
                } catch {
                    logger.warning("storing a kept chunk for other processes failed; trying again", metadata: ["error": "\(error)"])
                    connection = nil
                    stop.wait(seconds: 0.5)
                }
            }
        }
    }

    /// Stops storing (the process's workers are done); waits for a store under way.
    func stop() { thread.stop(waitingAtMost: 5) }

    /// After `stop`, when this process stops at a signal: stores every unfinished chunk it
    /// kept if another live process is still importing the run (that process may not be able
    /// to read the feed); nothing otherwise. Returns how many it stored.
    /// - Throws: `PostgresError`; `ImportError` when a kept chunk's file is gone.
    @discardableResult
    func storeKept(_ connection: PostgresConnection) throws -> Int {
        // Those that read this process's files too: the files may go with it.
        guard try work.othersImporting(connection, readersToo: true) > 0 else { return 0 }
        let kept = try connection.execute("""
            SELECT number, checksum FROM _ingest_chunks
            WHERE run = $1 AND finished IS NULL AND octet_length(bytes) = 0 AND number <= $2 ORDER BY number
            """, [String(work.run), String(work.lastWritten())])
        logger.info("storing the chunks this process kept, for the processes still importing", metadata: ["chunks": "\(kept.count)"])
        for row in 0..<kept.count {
            try work.store(number: try kept.int(row, 0), checksum: try kept.text(row, 1), connection)
        }
        return kept.count
    }

    /// What the uploading thread and `storeKept` share.
    private struct Work: Sendable {
        let run: Int
        let process: String
        let directory: String
        let ownWorkers: Int
        let leaseSeconds: Double
        let sums: @Sendable (Int) -> String?
        let lastWritten: @Sendable () -> Int

        /// Workers of the other live processes joined to the run.
        /// Workers of the other live processes of the run, but those that read the kept chunks'
        /// files themselves unless `readersToo`.
        func othersImporting(_ connection: PostgresConnection, readersToo: Bool = false) throws -> Int {
            Int(try connection.execute("""
                SELECT coalesce(sum(workers), 0) FROM _ingest_processes
                WHERE run = $1 AND id <> $2 AND state = 'running' AND heartbeat > now() - make_interval(secs => $3)
                    AND ($4 OR NOT reads_kept)
                """, [String(run), process, String(leaseSeconds), readersToo ? "t" : "f"])[0, 0] ?? "0") ?? 0
        }

        /// Stores the next kept chunk when other processes want one; false when none was stored.
        func storeOne(_ connection: PostgresConnection) throws -> Bool {
            let wanting = try othersImporting(connection)
            guard wanting > 0 else { return false }
            let last = lastWritten()
            // Unclaimed chunks: stored ones waiting for the others, and those only this process has
            // (up to the last its split wrote: a split made again goes over chunks a gone process kept).
            let unclaimed = try connection.execute("""
                SELECT count(*) FILTER (WHERE octet_length(bytes) > 0), count(*) FILTER (WHERE octet_length(bytes) = 0 AND number <= $2)
                FROM _ingest_chunks WHERE run = $1 AND finished IS NULL AND (owner IS NULL OR lease_until < now())
                """, [String(run), String(last)])
            let (waiting, kept) = (Int(unclaimed[0, 0] ?? "0") ?? 0, Int(unclaimed[0, 1] ?? "0") ?? 0)
            guard waiting < 2 * wanting, kept > 0 else { return false }
            // The first few kept chunks are the ones this process's workers claim next, unless they
            // are nearly all that is left: then the others are given work at once.
            let next = try connection.execute("""
                SELECT number, checksum FROM _ingest_chunks
                WHERE run = $1 AND finished IS NULL AND (owner IS NULL OR lease_until < now()) AND octet_length(bytes) = 0
                    AND number <= $3
                ORDER BY number OFFSET $2 LIMIT 1
                """, [String(run), String(kept > 2 * ownWorkers ? ownWorkers : 0), String(last)])
            guard next.count == 1, let number = Int(next[0, 0] ?? ""), let checksum = next[0, 1] else { return false }
            try store(number: number, checksum: checksum, connection)
            return true
        }

        /// Stores kept chunk `number` from its file, compressed, unless it was finished meanwhile.
        func store(number: Int, checksum: String, _ connection: PostgresConnection) throws {
            let path = directory + "/" + ChunkInfo.fileName(for: number)
            guard let bytes = try? FileOps.readFile(path),
                  sums(number) == checksum || bytes.withUnsafeBytes({ Checksum.hex(of: $0) }) == checksum else {
                throw ImportError("chunk \(number) of run \(run), kept by this process, is no longer in its chunk file \(path) as the split wrote it")
            }
            try connection.execute("""
                UPDATE _ingest_chunks SET bytes = $3 WHERE run = $1 AND number = $2 AND finished IS NULL AND octet_length(bytes) = 0
                """, [String(run), String(number)], bytes: ChunkCompression.compress(bytes))
            // Claims of other processes waiting for a stored chunk wake now.
            try PostgresChunkSource.notify(connection)
        }
    }
}

extension PostgresImport {
    /// Chunks of `run` not finished whose bytes are not in the database: kept by the process
    /// the run's record names (`PostgresRunRecord.splitProcess`).
    static func keptChunks(run: Int, _ connection: PostgresConnection) throws -> Int {
        Int(try connection.execute("""
            SELECT count(*) FROM _ingest_chunks WHERE run = $1 AND finished IS NULL AND octet_length(bytes) = 0
            """, [String(run)])[0, 0] ?? "0") ?? 0
    }

    /// Whether the process answering for `record`'s kept chunks is alive: running, and
    /// beating within the lease.
    static func keeperIsAlive(_ record: PostgresRunRecord, _ connection: PostgresConnection) throws -> Bool {
        guard let process = record.splitProcess else { return false }
        return try connection.execute("""
            SELECT 1 FROM _ingest_processes
            WHERE id = $1 AND state = 'running' AND heartbeat > now() - make_interval(secs => $2)
            """, [process, String(record.leaseSeconds)]).count == 1
    }
}
