import Foundation
import IngestJSON
import IngestStore
import Logging
import Synchronization

/// One worker of a process joined to an import on a PostgreSQL store: its own
/// connection, and the batch path's writer and row mapper, or (for a pipeline that path
/// cannot write) an object-path `ImportWorker` with a private context. It claims chunks
/// until none is left, maps each K records and saves them with the chunk's marker (and
/// rejects) in one transaction; batch-path saves are retried when PostgreSQL reports a
/// deadlock or a concurrent insert, object-path saves take the store's write lock.
final class PostgresChunkWorker {
    struct Totals: Sendable {
        var chunks = 0
        var records = 0
        var rejected = 0
        var outcomes = RecordOutcomes()
        var leasesLost = 0
    }

    /// How this worker writes: the batch path, or objects in a context.
    enum Path {
        case batch(PostgresBatchWriter, RowMapper)
        case objects(ImportWorker, LeaseBookkeeping)
    }

    let connection: PostgresConnection
    /// The store's address (with its password, if it has one), for a split taken over.
    let url: PostgresURL
    /// The batch path's second connection, for claims and chunk bytes while `connection` writes.
    private let claims: PostgresConnection?
    /// Where this process's own split left the chunk files (the importing process reads
    /// them there instead of from the database), or nil.
    let localChunks: String?
    let path: Path
    let run: Int
    let record: PostgresRunRecord
    /// This worker's name on the chunks it claims: its process's ID, a slash, its number.
    let owner: String
    /// Its process's ID (`_ingest_processes.id`).
    let process: String
    let logger: Logger
    private(set) var totals = Totals()

    /// The batch path's writer (its saves run only on that path).
    private var writer: PostgresBatchWriter {
        guard case .batch(let writer, _) = path else { preconditionFailure("a batch save on the object path") }
        return writer
    }

    /// A save's loop was told to stop (between saves).
    private struct Stopped: Error {}

    /// - Throws: `PostgresError` or `StoreError` when the store cannot be reached.
    init(store: PostgresStore, spec: PipelineSpec, run: Int, record: PostgresRunRecord, process: String, number: Int,
         localChunks: String? = nil, logger: Logger) throws {
        connection = try store.connect()
        url = store.url
        owner = "\(process)/\(number)"
        self.localChunks = localChunks
        if let batch = try Self.batchPath(store: store, connection: connection, spec: spec, record: record, logger: logger) {
            path = batch
            claims = try store.connect()
        } else {
            claims = nil
            // Discriminators, to-many mappings, the reject rule, links to itself: objects in a context.
            let coordinator = try PersistentStoreCoordinator(opened: store)
            let bookkeeping = LeaseBookkeeping(owner: owner, process: process, leaseSeconds: record.leaseSeconds)
            let context = ObjectContext(coordinator: coordinator, name: "join-\(number)")
            path = .objects(ImportWorker(context: context, spec: spec, bookkeeping: bookkeeping, firstRowOfRun: record.firstRowOfRun),
                            bookkeeping)
        }
        self.run = run
        self.record = record
        self.process = process
        self.logger = logger
    }

    /// The batch path's writer and mapper for `spec`, or nil when that path cannot write it.
    private static func batchPath(store: PostgresStore, connection: PostgresConnection, spec: PipelineSpec, record: PostgresRunRecord,
                                  logger: Logger) throws -> Path? {
        let writer: PostgresBatchWriter
        do {
            writer = try PostgresBatchWriter(store: store, connection: connection, rules: spec.mappings.mapValues(\.onConflict))
        } catch {
            guard case .unsupported(let why) = error else { throw error }
            logger.debug("the batch path cannot write this pipeline: importing objects", metadata: ["reason": "\(why)"])
            return nil
        }
        writer.firstRowOfRun = record.firstRowOfRun
        return RowMapper(mapper: RecordMapper(spec: spec), inserter: writer).map { .batch(writer, $0) }
    }

    /// Claims and imports chunks until the run has none unclaimed; waits while chunks
    /// are held by other processes, so a dead one's chunks are taken once its lease ends.
    func work(stop: @escaping @Sendable () -> Bool) throws {
        if case .batch(let writer, let rows) = path, let claims { return try pipelined(writer: writer, rows: rows, claims: claims, stop: stop) }
        while !stop() {
            guard let lease = try ChunkLease.claim(run: run, owner: owner, leaseSeconds: record.leaseSeconds, connection) else {
                if try !moreChunksMayCome(connection) { return }
                continue
            }
            do {
                try importChunk(lease, stop: stop)
            } catch is ChunkLease.Lost {
                totals.leasesLost += 1
                logger.warning("chunk lease lost to another process (this process stalled longer than the lease)",
                               metadata: ["chunk": "\(lease.number)"])
            }
        }
    }

    /// With no chunk to claim now: waits a moment and returns true when one may come (the
    /// split is still storing chunks, or another process holds some that it may give back
    /// when it dies), false when the run has none left for this process.
    /// - Throws: `ImportError` when the run's split failed or stopped, so no chunk will come.
    private func moreChunksMayCome(_ connection: PostgresConnection) throws -> Bool {
        guard try ChunkLease.isRunning(run: run, connection) else { return false }
        if try ChunkLease.unfinished(run: run, connection) > 0 {
            Thread.sleep(forTimeInterval: min(1, record.leaseSeconds / 4))
            return true
        }
        guard let (text, current) = try PostgresImport.storedRecord(of: run, connection), !current.isSplit else { return false }
        if let failure = current.splitError {
            throw ImportError("run \(run)'s split failed (\(failure)), so no more of its chunks will come")
        }
        if Date().timeIntervalSince1970 - (current.splitUpdated ?? 0) > current.leaseSeconds {
            // The splitting process is gone: a process that can read the feed takes the split over.
            if try takeOverSplit(current, stored: text, connection) { return true }
            throw ImportError("run \(run)'s split stopped (the process splitting \(current.feed) is gone, and this one cannot read that feed); continue it with: ingest import \(current.feed) --store \(connection.target)")
        }
        // The split is storing chunks: the next is a few milliseconds away.
        Thread.sleep(forTimeInterval: 0.05)
        return true
    }

    /// Splits the run's feed here when its split stopped (its process died) and this process
    /// can read the same feed: one process takes it over (compare-and-set on the run's
    /// record), stores the chunks the split had not stored yet, and goes back to importing.
    /// Returns false when the feed cannot be read here.
    private func takeOverSplit(_ current: PostgresRunRecord, stored before: String, _ connection: PostgresConnection) throws -> Bool {
        guard current.feed != "-", !FileOps.isReadOnce(current.feed), FileOps.fileSize(current.feed) == current.feedByteSize else { return false }
        var taken = current
        taken.splitUpdated = Date().timeIntervalSince1970
        let after = String(decoding: try JSONEncoder().encode(taken), as: UTF8.self)
        let claimed = try connection.execute("UPDATE _ingest_runs SET record = $3 WHERE run = $1 AND record = $2",
                                             [String(run), before, after]).changed == 1
        // Another process took it over first: its chunks are coming.
        guard claimed else { return true }
        logger.warning("the split of this run stopped with its process; splitting the feed here", metadata: ["feed": "\(current.feed)"])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-split-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try PostgresImport.split(feed: current.feed, run: run, url: url, directory: directory,
                                     options: PostgresImportOptions(leaseSeconds: current.leaseSeconds, logger: logger))
        return true
    }

    /// A chunk's bytes: this process's own chunk file when it has one, else the database's
    /// copy; checked against the chunk's checksum either way.
    private func bytes(of lease: ChunkLease, on connection: PostgresConnection) throws -> [UInt8] {
        if let localChunks, let local = try? FileOps.readFile(localChunks + "/" + ChunkInfo.fileName(for: lease.number)),
           local.withUnsafeBytes({ Checksum.hex(of: $0) }) == lease.checksum {
            return local
        }
        guard let bytes = try connection.fetchBytes("SELECT bytes FROM _ingest_chunks WHERE run = $1 AND number = $2",
                                                     [String(run), String(lease.number)]) else { throw ChunkLease.Lost() }
        guard bytes.withUnsafeBytes({ Checksum.hex(of: $0) }) == lease.checksum else {
            throw ImportError(.chunkChanged(path: "chunk \(lease.number) of run \(run) in \(connection.target)"))
        }
        return bytes
    }

    private func importChunk(_ lease: ChunkLease, stop: @escaping () -> Bool) throws {
        logger.debug("chunk claimed", metadata: ["chunk": "\(lease.number)", "done": "\(lease.done)", "records": "\(lease.records)"])
        let bytes = try bytes(of: lease, on: connection)
        // The batch path runs `pipelined`; this is the object path's.
        guard case .objects(let importer, let bookkeeping) = path else { preconditionFailure("a batch path chunk outside the pipeline") }
        try importChunk(lease, bytes: bytes, importer: importer, bookkeeping: bookkeeping, stop: stop)
    }

    /// The object path: the chunk's records mapped onto objects, saved every K records.
    private func importChunk(_ lease: ChunkLease, bytes: [UInt8], importer: ImportWorker, bookkeeping: LeaseBookkeeping,
                             stop: @escaping () -> Bool) throws {
        let chunk = ChunkInfo(index: lease.number, firstRecord: lease.firstRecord, records: lease.records, byteSize: bytes.count,
                              checksum: lease.checksum)
        bookkeeping.begin(lease)
        let context = importer.context
        var totals = self.totals
        defer { self.totals = totals }
        do {
            try context.perform {
                do {
                    try importer.importChunk(chunk, bytes: bytes, skip: lease.done, saveEvery: record.saveEvery) { saved in
                        totals.records += saved.imported
                        totals.rejected += saved.rejected
                        totals.outcomes = totals.outcomes + saved.outcomes
                        logger.debug("saved", metadata: ["chunk": "\(lease.number)", "done": "\(bookkeeping.done)",
                                                         "records": "\(saved.imported)", "rejected": "\(saved.rejected)"])
                        if stop() && bookkeeping.done < lease.records { throw Stopped() }
                    }
                } catch {
                    importer.discard()
                    throw error
                }
            }
        } catch is Stopped {
            return
        }
        totals.chunks += 1
    }

    /// One batch, handed from the mapping thread to the writing one.
    struct Batch: Sendable {
        var lease: ChunkLease
        var request: BatchInsertRequest
        var rejects: [(index: Int, reason: String)]
        /// The chunk's marker before and after this batch.
        var from: Int
        var done: Int
        var bytes: [UInt8]
        var endsChunk: Bool
    }

    /// The batch path, in two stages so that the client's work and the server's overlap:
    /// this thread claims chunks (on `claims`) and maps each K records into a request; a
    /// writer thread writes them (on `connection`), each with the chunk's marker, in the
    /// order they were mapped. The mapper stays at most two batches ahead.
    private func pipelined(writer: PostgresBatchWriter, rows: RowMapper, claims: PostgresConnection,
                           stop: @escaping @Sendable () -> Bool) throws {
        let handoff = Handoff<Batch>(capacity: 2)
        let failure = Mutex<(any Error)?>(nil)
        let finished = DispatchSemaphore(value: 0)
        // The writer thread alone uses `connection` and `totals` until `finished`.
        let me = UncheckedSendable(self)
        Thread.detachNewThread {
            defer { finished.signal() }
            var lost: Int?
            while let batch = handoff.pop() {
                guard failure.withLock({ $0 == nil }), lost != batch.lease.number else { continue }
                do {
                    try me.value.save(batch.request, rejects: batch.rejects, from: batch.from, done: batch.done, lease: batch.lease,
                                      bytes: batch.bytes)
                    if batch.endsChunk { me.value.totals.chunks += 1 }
                } catch is ChunkLease.Lost {
                    lost = batch.lease.number
                    me.value.totals.leasesLost += 1
                    me.value.logger.warning("chunk lease lost to another process (this process stalled longer than the lease)",
                                            metadata: ["chunk": "\(batch.lease.number)"])
                } catch {
                    failure.withLock { $0 = error }
                    handoff.cancel()
                }
            }
        }
        do {
            claiming: while !stop() && failure.withLock({ $0 == nil }) {
                guard let lease = try ChunkLease.claim(run: run, owner: owner, leaseSeconds: record.leaseSeconds, claims) else {
                    if try !moreChunksMayCome(claims) { break }
                    continue
                }
                logger.debug("chunk claimed", metadata: ["chunk": "\(lease.number)", "done": "\(lease.done)", "records": "\(lease.records)"])
                let bytes = try bytes(of: lease, on: claims)
                var request = writer.makeRequest(text: bytes)
                var rejects: [(index: Int, reason: String)] = []
                var pending = 0
                var reason: String?
                var saved = lease.done
                var lines = ChunkLines.Iterator(bytes: bytes, skip: lease.done)
                while let (range, index) = lines.next() {
                    try rows.add(record: range, number: index, to: &request, reason: &reason)
                    if let reason { rejects.append((index, reason)) }
                    pending += 1
                    if pending == record.saveEvery || index + 1 == lease.records {
                        let batch = Batch(lease: lease, request: request, rejects: rejects, from: saved, done: index + 1, bytes: bytes,
                                          endsChunk: index + 1 == lease.records)
                        guard handoff.push(batch) else { break claiming }
                        saved = index + 1
                        request = writer.makeRequest(text: bytes)
                        rejects.removeAll(keepingCapacity: true)
                        pending = 0
                        if stop() { break claiming }
                    }
                }
                if lease.records == 0 {
                    let empty = Batch(lease: lease, request: request, rejects: [], from: 0, done: 0, bytes: bytes, endsChunk: true)
                    guard handoff.push(empty) else { break claiming }
                }
            }
        } catch {
            failure.withLock { if $0 == nil { $0 = error } }
        }
        handoff.finish()
        finished.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }

    /// Writes one batch with the chunk's marker, its rejects and the process's counts in
    /// one transaction.
    private func save(_ request: BatchInsertRequest, rejects mapped: [(index: Int, reason: String)], from previous: Int, done: Int,
                      lease: ChunkLease, bytes: [UInt8]) throws {
        let started = Date()
        var attempt = 0
        while true {
            do {
                try connection.execute("BEGIN")
                let result = try saveInTransaction(request, rejects: mapped, from: previous, done: done, lease: lease, bytes: bytes)
                try connection.execute("COMMIT")
                writer.didCommit()
                totals.records += result.records
                totals.rejected += result.rejected.count
                totals.outcomes = totals.outcomes + RecordOutcomes(inserted: result.records - result.updated - result.unchanged,
                                                                   updated: result.updated, unchanged: result.unchanged,
                                                                   duplicates: result.duplicates)
                logger.debug("saved", metadata: ["chunk": "\(lease.number)", "done": "\(done)", "records": "\(result.records)",
                                                 "rejected": "\(result.rejected.count)", "ms": "\(Int(Date().timeIntervalSince(started) * 1000))"])
                return
            } catch {
                _ = try? connection.execute("ROLLBACK")
                writer.didRollBack()
                // Deadlocks and keys inserted by another process at the same moment: try again.
                guard case .server(_, let state)? = error as? PostgresError, state == "40001" || state == "40P01", attempt < 20 else { throw error }
                attempt += 1
                logger.debug("save retried", metadata: ["chunk": "\(lease.number)", "reason": "\(error)"])
                Thread.sleep(forTimeInterval: Double.random(in: 0.005...0.05) * Double(attempt))
            }
        }
    }

    private func saveInTransaction(_ request: BatchInsertRequest, rejects mapped: [(index: Int, reason: String)], from previous: Int,
                                   done: Int, lease: ChunkLease, bytes: [UInt8]) throws -> BatchResult {
        try lease.advance(from: previous, to: done, owner: owner, leaseSeconds: record.leaseSeconds, connection)
        var result = try writeRecordByRecordOnDataErrors(request)
        let rejects = mapped + result.rejected.map { (index: $0.record, reason: $0.reason) }
        let chunk = ChunkInfo(index: lease.number, firstRecord: lease.firstRecord, records: lease.records, byteSize: bytes.count,
                              checksum: lease.checksum)
        let lines = try rejects.map { index, reason in
            logger.trace("record rejected", metadata: ["chunk": "\(lease.number)", "index": "\(index)", "reason": "\(reason)"])
            let reject = ImportMarker.Reject(chunk, index: index, reason: reason, text: ChunkLines.text(ofRecord: index, in: bytes))
            return (index: index, json: try reject.jsonLine())
        }
        try lease.recordSave(rejects: lines, records: result.records + rejects.count, done: done, process: process, connection)
        result.rejected = rejects.map { BatchRejection(record: $0.index, reason: $0.reason) }
        return result
    }

    /// The batch in one go; when the server refuses its data (a value out of a column's
    /// range, say), the same records again one at a time, each behind a savepoint, so
    /// only the records at fault are rejected, with the server's reason.
    private func writeRecordByRecordOnDataErrors(_ request: BatchInsertRequest) throws -> BatchResult {
        try connection.execute("SAVEPOINT batch")
        do {
            let result = try writer.write(request)
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
