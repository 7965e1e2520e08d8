import Foundation
import IngestJSON
import IngestStore
import Logging

/// The batch path's writer on PostgreSQL: each save is one `BatchSave` on the worker's
/// own connection that moves the chunk's marker by compare-and-set (`ChunkLease.advance`),
/// writes the rows (`PostgresBatchWriter`), the rejects and the process's counts.
/// `BatchSave` tries it again when it meets a deadlock or a key another process inserted
/// meanwhile, and writes it record by record when the server refuses a record's data.
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

    /// Where this writer's last commit left the run: its chunk and the chunk's marker after it.
    private var lastCommit: (chunk: Int, done: Int, ended: Bool)?

    func save(_ prepared: PostgresBatchWriter.Prepared, _ save: ChunkSave) throws -> BatchResult {
        // Saves commit in feed order (`PostgresCommitTurns`): unless this save goes on from this
        // writer's last commit, other writers committed in between.
        let continues = lastCommit.map { last in
            last.chunk == save.chunk.index ? last.done == save.from : last.ended && last.chunk + 1 == save.chunk.index && save.from == 0
        } ?? false
        if !continues { writer.othersWrote() }
        var saving = BatchSave(writer)
        saving.onRetry = { [logger] attempt, error in
            logger.debug("save retried", metadata: ["chunk": "\(save.chunk.index)", "attempt": "\(attempt)", "reason": "\(error)"])
        }
        saving.onRecordByRecord = { [logger] error in
            logger.debug("save retried record by record", metadata: ["reason": "\(error)"])
        }
        let lease = ChunkLease(run: run, chunk: save.chunk, done: save.from)
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
            return [:]
        }
        observer?.postSave(result.history, contextName: "import run \(run) chunk \(save.chunk.index)")
        lastCommit = (save.chunk.index, save.done, save.done >= save.chunk.records)
        if save.done >= save.chunk.records { turns?.finished(save.chunk.index) }
        return result
    }
}
