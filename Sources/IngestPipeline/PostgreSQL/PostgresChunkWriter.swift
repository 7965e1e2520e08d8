import Foundation
import IngestJSON
import IngestStore
import Logging

/// The batch path's writer on PostgreSQL: each save is one `BatchSave` on the worker's
/// own connection that moves the chunk's marker by compare-and-set (`ChunkLease.advance`),
/// writes the rows (`PostgresBatchWriter`), the rejects and the process's counts.
/// `BatchSave` tries it again when it meets a deadlock, a lock wait past `lock_timeout` or
/// a key another transaction inserted meanwhile, and writes it record by record when the
/// server refuses a record's data.
final class PostgresChunkWriter: BatchChunkWriter {
    let writer: PostgresBatchWriter
    let connection: PostgresConnection
    let run: Int
    let owner: String
    let process: String
    let leaseSeconds: Double
    let logger: Logger
    /// Told of every save once it committed (a container's coordinator, whose view context
    /// merges it).
    var observer: PersistentStoreCoordinator?
    /// Told of every chunk this writer finished, once committed: the next chunk's turn.
    var turns: PostgresCommitTurns?

    init(writer: PostgresBatchWriter, connection: PostgresConnection, run: Int, owner: String, process: String,
         leaseSeconds: Double, logger: Logger) {
        self.writer = writer
        self.connection = connection
        self.run = run
        self.owner = owner
        self.process = process
        self.leaseSeconds = leaseSeconds
        self.logger = logger
    }

    /// The server writes while the client maps.
    var overlapsMapping: Bool { true }

    var requests: any BatchRequestMaking { writer }

    func prepare(_ request: BatchInsertRequest) -> PostgresBatchWriter.Prepared {
        writer.prepare(request)
    }

    /// The last commit of this process's writers in the run, shared by them as what they
    /// remember of stored objects is (`PostgresBatchWriter.known`).
    var commits = PostgresProcessCommits()

    func save(_ prepared: PostgresBatchWriter.Prepared, _ save: ChunkSave) throws -> BatchResult {
        // Saves commit in feed order (`PostgresCommitTurns`): unless this save goes on from this
        // process's last commit, other processes committed in between.
        if !commits.follows(save) { writer.othersWrote() }
        var saving = BatchSave(writer)
        saving.onRetry = { [logger] attempt, error in
            logger.debug("save retried", metadata: ["chunk": "\(save.chunk.index)", "attempt": "\(attempt)", "reason": "\(error)"])
        }
        saving.onRecordByRecord = { [logger] error in
            logger.debug("save retried record by record", metadata: ["reason": "\(error)"])
        }
        let lease = ChunkLease(run: run, chunk: save.chunk, done: save.from)
        // Cleared by `committed` once the commit is through, or here when it failed.
        defer { commits.ended(save) }
        let result = try saving.run(prepared, author: "import run \(run) chunk \(save.chunk.index)") {
            try lease.advance(from: save.from, to: save.done, owner: owner, leaseSeconds: leaseSeconds, connection)
        } after: { result in
            var rejects = save.rejects
            for rejection in result.rejected {
                rejects.append(ImportMarker.Reject(save.chunk, index: rejection.record, reason: rejection.reason,
                                                   text: ChunkLines.text(ofRecord: rejection.record, in: save.bytes)))
            }
            let lines = try rejects.map { (index: $0.index, json: try $0.jsonLine()) }
            try lease.recordSave(rejects: lines, members: save.members, records: result.records + rejects.count, done: save.done,
                                 process: process, connection)
            result.rejected = rejects.map { BatchRejection(record: $0.index, reason: $0.reason) }
            commits.committing(save)
            return [:]
        }
        // Said before the coordinator's observers run: the next chunk's save waits for it.
        commits.committed(save)
        observer?.postSave(result.history, contextName: "import run \(run) chunk \(save.chunk.index)")
        if save.done >= save.chunk.records { turns?.finished(save.chunk.index) }
        return result
    }
}

/// Where the last commit of one process's writers left a run: its chunk and the chunk's
/// marker after it. A save that goes on from there follows it in feed order with no other
/// process's commit between (`PostgresCommitTurns`).
///
/// The commit that finishes a chunk gives the next chunk its turn on the server (a waiting
/// worker reads the chunk finished, or is notified) before its writer can say so here: a
/// save that asks while another writer's commit is under way waits for that writer to say
/// how it went. (Without the wait, the next chunk's save took the run as written by another
/// process in a tenth of the chunks, and forgot what it knew of the objects' fields.)
final class PostgresProcessCommits: @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var last: (chunk: Int, done: Int, ended: Bool)?
    private var inFlight: (chunk: Int, done: Int)?
    /// How long a save waits for another writer's commit to be said before it takes the run
    /// as written by others (always safe: it only costs lookups).
    static let commitWait = 5.0

    /// Whether `save` goes on from the last commit (once a commit under way has ended).
    func follows(_ save: ChunkSave) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: Self.commitWait)
        while inFlight != nil {
            guard condition.wait(until: deadline) else { return false }
        }
        guard let last else { return false }
        return last.chunk == save.chunk.index ? last.done == save.from
            : last.ended && last.chunk + 1 == save.chunk.index && save.from == 0
    }

    /// `save`'s transaction is about to commit.
    func committing(_ save: ChunkSave) {
        condition.lock()
        inFlight = (save.chunk.index, save.done)
        condition.unlock()
    }

    /// `save` committed.
    func committed(_ save: ChunkSave) {
        condition.lock()
        last = (save.chunk.index, save.done, save.done >= save.chunk.records)
        inFlight = nil
        condition.broadcast()
        condition.unlock()
    }

    /// `save` ended, committed or not: it is no longer under way (another writer's commit
    /// under way is left as it is).
    func ended(_ save: ChunkSave) {
        condition.lock()
        if let inFlight, inFlight == (save.chunk.index, save.done) {
            self.inFlight = nil
            condition.broadcast()
        }
        condition.unlock()
    }
}
