import Foundation
import IngestJSON
import IngestStore
import Logging

/// The batch path's writer on PostgreSQL: each save is one transaction on the worker's
/// own connection that moves the chunk's marker by compare-and-set (`ChunkLease.advance`),
/// writes the rows (`PostgresBatchWriter`), the rejects and the process's counts. A save
/// that meets a deadlock or a key another process inserted meanwhile is tried again;
/// one the server refuses for a record's data is written again record by record, so
/// only the records at fault are rejected.
final class PostgresChunkWriter: BatchChunkWriter {
    let writer: PostgresBatchWriter
    let connection: PostgresConnection
    let run: Int
    let owner: String
    let process: String
    let leaseSeconds: Double
    let logger: Logger
    /// Whether saves record history (the pipeline's choice); the writer may gather what
    /// each write changed without it, for `observer`.
    var writesHistory = true
    /// Told of every save once it committed (a container's coordinator, whose view context
    /// merges it).
    var observer: PersistentStoreCoordinator?

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

    /// A request and its keys' slots (`PostgresBatchWriter.stage`); the write looks keys up
    /// inside its transaction.
    struct Prepared: Sendable {
        let request: BatchInsertRequest
        let staged: PostgresBatchWriter.Staged
    }

    /// Works out the request's key slots: on the worker's mapping thread, while this writer's
    /// connection writes the batch before.
    func prepare(_ request: BatchInsertRequest) -> Prepared {
        Prepared(request: request, staged: writer.stage(request))
    }

    /// Where this writer's last commit left the run: its chunk and the chunk's marker after it.
    private var lastCommit: (chunk: Int, done: Int, ended: Bool)?

    func save(_ prepared: Prepared, _ save: ChunkSave) throws -> BatchResult {
        // Saves commit in feed order (`PostgresCommitTurns`): unless this save goes on from this
        // writer's last commit, other writers committed in between.
        let continues = lastCommit.map { last in
            last.chunk == save.chunk.index ? last.done == save.from : last.ended && last.chunk + 1 == save.chunk.index && save.from == 0
        } ?? false
        if !continues { writer.othersWrote() }
        var attempt = 0
        while true {
            do {
                try connection.execute("BEGIN")
                var result = try saveInTransaction(prepared, save)
                result.retries = attempt
                try connection.execute("COMMIT")
                writer.didCommit()
                observer?.postSave(result.history, contextName: "import run \(run) chunk \(save.chunk.index)")
                lastCommit = (save.chunk.index, save.done, save.done >= save.chunk.records)
                return result
            } catch {
                _ = try? connection.execute("ROLLBACK")
                writer.didRollBack()
                // Deadlocks and keys inserted by another process at the same moment: try again.
                guard (error as? PostgresError)?.isTransactionConflict == true, attempt < 20 else { throw error }
                attempt += 1
                logger.debug("save retried", metadata: ["chunk": "\(save.chunk.index)", "attempt": "\(attempt)", "reason": "\(error)"])
                Thread.sleep(forTimeInterval: Double.random(in: 0.005...0.05) * Double(attempt))
            }
        }
    }

    private func saveInTransaction(_ prepared: Prepared, _ save: ChunkSave) throws -> BatchResult {
        let lease = ChunkLease(run: run, chunk: save.chunk, done: save.from)
        try lease.advance(from: save.from, to: save.done, owner: owner, leaseSeconds: leaseSeconds, connection)
        var result = try writeRecordByRecordOnDataErrors(prepared)
        var rejects = save.rejects
        for rejection in result.rejected {
            rejects.append(ImportMarker.Reject(save.chunk, index: rejection.record, reason: rejection.reason,
                                               text: ChunkLines.text(ofRecord: rejection.record, in: save.bytes)))
        }
        let lines = try rejects.map { (index: $0.index, json: try $0.jsonLine()) }
        if writesHistory { try writer.recordHistory(of: result, author: "import run \(run) chunk \(save.chunk.index)") }
        try lease.recordSave(rejects: lines, members: save.members, records: result.records + rejects.count, done: save.done,
                             process: process, connection)
        result.rejected = rejects.map { BatchRejection(record: $0.index, reason: $0.reason) }
        return result
    }

    /// The batch in one go; when the server refuses its data (a value out of a column's
    /// range, say), the same records again one at a time, each behind a savepoint, so
    /// only the records at fault are rejected, with the server's reason.
    private func writeRecordByRecordOnDataErrors(_ prepared: Prepared) throws -> BatchResult {
        let request = prepared.request
        try connection.execute("SAVEPOINT batch")
        do {
            let result = try writer.write(request, staged: prepared.staged)
            try connection.execute("RELEASE SAVEPOINT batch")
            return result
        } catch {
            guard error.isAboutData else { throw error }
            try connection.execute("ROLLBACK TO SAVEPOINT batch")
            logger.debug("save retried record by record", metadata: ["reason": "\(error)"])
        }
        var total = BatchResult()
        for index in 0..<request.recordCount {
            try connection.execute("SAVEPOINT record")
            do {
                let one = try writer.write(request, only: [index])
                try connection.execute("RELEASE SAVEPOINT record")
                total.records += one.records
                total.rejected += one.rejected
                total.updated += one.updated
                total.unchanged += one.unchanged
                total.duplicates += one.duplicates
                total.history.merge(one.history)
            } catch {
                guard error.isAboutData else { throw error }
                try connection.execute("ROLLBACK TO SAVEPOINT record")
                try connection.execute("RELEASE SAVEPOINT record")
                total.rejected.append(BatchRejection(record: request.recordNumber(index), reason: error.description))
            }
        }
        return total
    }
}
