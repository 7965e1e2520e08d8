import Foundation
public import IngestStore
import Logging
public import Synchronization

/// One process's part in an import on a PostgreSQL store: it registers itself, keeps a
/// heartbeat (which renews the leases of the chunks it holds), and runs workers that
/// claim chunks until the run has none left. Any number of processes, on any machines,
/// may join the same run; one killed at any moment loses nothing (its saves are whole
/// transactions) and repeats nothing (its chunks go on from their markers once its
/// leases run out).
public final class PostgresJoin: Sendable {
    public let url: PostgresURL
    public let options: PostgresImportOptions
    /// Set to stop at the next save boundary (a signal, say).
    public let cancellation = Atomic<Bool>(false)

    /// What this process did.
    public struct Report: Sendable {
        public var run: Int
        public var process: String
        public var workers: Int
        public var chunks: Int
        public var records: Int
        public var rejected: Int
        public var outcomes: RecordOutcomes
        public var seconds: Double
        /// Whether the run has no chunk left (this process or another finished it).
        public var runFinished: Bool
        public var stopped: Bool
        public var leasesLost: Int
        /// The run's totals, as the store has them after this process is done.
        public var runRecords: Int
        public var runRejected: Int
    }

    public init(url: PostgresURL, options: PostgresImportOptions) {
        self.url = url
        self.options = options
    }

    /// Joins the store's running import (`run`, or the newest unfinished one).
    /// - Throws: `ImportError.noImport` when no run is unfinished; `PostgresError` when the
    ///   store cannot be reached or written; `PipelineError` when the run's pipeline no
    ///   longer loads; `ImportError.chunkChanged` when a chunk's bytes were altered.
    public func run(run wanted: Int? = nil) throws -> Report {
        let started = Date()
        let connection = try PostgresConnection(url)
        let found: (Int, PostgresRunRecord)?
        if let wanted {
            let rows = try connection.execute("SELECT record FROM _ingest_runs WHERE run = $1 AND state = 'running'", [String(wanted)])
            found = rows.count == 1 ? (wanted, try JSONDecoder().decode(PostgresRunRecord.self, from: Data(rows[0, 0]!.utf8))) : nil
        } else {
            found = try PostgresImport.latestUnfinished(connection)
        }
        guard let (run, record) = found else { throw ImportError(.noImport(store: url.description)) }
        let spec = try PipelineSpec.parse(Array(record.pipeline.utf8))
        let store = try PostgresStore(url: url, model: spec.model)
        let workerCount = min(PipelineSpec.maxWorkers, max(1, options.workers ?? spec.workers ?? ProcessInfo.processInfo.activeProcessorCount))
        let host = ProcessInfo.processInfo.hostName
        let pid = Int(ProcessInfo.processInfo.processIdentifier)
        let process = "\(host):\(pid):\(UUID().uuidString.prefix(8).lowercased())"
        try connection.execute("INSERT INTO _ingest_processes (id, run, host, pid, workers) VALUES ($1, $2, $3, $4, $5)",
                               [process, String(run), host, String(pid), String(workerCount)])
        options.logger.info("joined the import", metadata: ["run": "\(run)", "process": "\(process)", "workers": "\(workerCount)"])

        let heartbeat = Heartbeat(url: url, process: process, leaseSeconds: record.leaseSeconds, logger: options.logger)
        let state = RunState(rejected: 0, workers: workerCount, started: StageTimes.now())
        let localChunks = options.localChunks
        let workers = WorkerStage(
            saveEvery: record.saveEvery,
            makeWorker: { number, logger in
                let owner = "\(process)/\(number + 1)"
                let connection = try store.connect()
                func source(_ connection: PostgresConnection) -> PostgresChunkSource {
                    PostgresChunkSource(connection: connection, url: store.url, run: run, record: record, owner: owner,
                                        localChunks: localChunks, logger: logger)
                }
                if let writer = try Self.batchWriter(store: store, connection: connection, spec: spec, record: record, logger: logger),
                   let rows = RowMapper(mapper: RecordMapper(spec: spec), inserter: writer) {
                    // Claims and chunk bytes on a connection of their own while this one writes.
                    return (source(try store.connect()), .batch(PostgresChunkWriter(writer: writer, connection: connection, run: run, owner: owner, process: process,
                                                               leaseSeconds: record.leaseSeconds, logger: logger), rows))
                }
                // Discriminators, to-many mappings, the reject rule, links to itself: objects in a context.
                let coordinator = try PersistentStoreCoordinator(opened: store)
                let bookkeeping = LeaseBookkeeping(run: run, owner: owner, process: process, leaseSeconds: record.leaseSeconds)
                let context = ObjectContext(coordinator: coordinator, name: "join-\(number + 1)")
                let importer = ImportWorker(context: context, spec: spec, bookkeeping: bookkeeping, firstRowOfRun: record.firstRowOfRun)
                importer.logger = logger
                // The object path writes through the context's coordinator: the connection is the source's.
                return (source(connection), .objects(importer))
            },
            afterSave: { worker, saved in _ = state.saved(saved, worker: worker) },
            stop: { [self] in cancellation.load(ordering: .relaxed) },
            logger: options.logger)
        let workerTotals = workers.run(count: workerCount, state: state)
        heartbeat.stop()
        let stopped = cancellation.load(ordering: .relaxed)
        let error = state.failure
        // The workers' failure may be the server's going away: this process's state then
        // goes on a new connection, so status shows the run interrupted at once, not when
        // the lease ends (best effort: a restarting server is back within seconds; one
        // that stays down leaves it to the lease).
        if let error {
            func markFailed(_ connection: PostgresConnection) throws {
                try connection.execute("UPDATE _ingest_processes SET state = 'failed', heartbeat = now() WHERE id = $1", [process])
                try connection.execute("""
                    UPDATE _ingest_chunks SET owner = NULL, lease_until = NULL WHERE left(owner, length($1) + 1) = $1 || '/' AND finished IS NULL
                    """, [process])
            }
            if (try? markFailed(connection)) == nil {
                for attempt in 0..<10 {
                    if let fresh = try? PostgresConnection(url), (try? markFailed(fresh)) != nil { break }
                    if attempt < 9 { Thread.sleep(forTimeInterval: 0.5) }
                }
            }
            throw error
        }
        let finished = try ChunkLease.unfinished(run: run, connection) == 0 && (PostgresImport.record(of: run, connection)?.1.isSplit ?? true)
        if finished {
            try connection.execute("UPDATE _ingest_runs SET state = 'finished', ended = now() WHERE run = $1 AND state = 'running'", [String(run)])
        }
        try connection.execute("UPDATE _ingest_processes SET state = $2, heartbeat = now() WHERE id = $1",
                               [process, error != nil ? "failed" : stopped ? "stopped" : "finished"])
        // Chunks this process still holds go back to the pool at once, not when the lease ends.
        try connection.execute("""
            UPDATE _ingest_chunks SET owner = NULL, lease_until = NULL WHERE left(owner, length($1) + 1) = $1 || '/' AND finished IS NULL
            """, [process])
        if let error { throw error }
        if !finished, !stopped,
           try connection.execute("SELECT state FROM _ingest_runs WHERE run = $1", [String(run)])[0, 0] == "abandoned" {
            throw ImportError("run \(run) was abandoned by another import (--abandon-run) while this process imported it; its saves stopped there")
        }
        let counts = try connection.execute("""
            SELECT coalesce(sum(done), 0), (SELECT count(*) FROM _ingest_rejects WHERE run = $1) FROM _ingest_chunks WHERE run = $1
            """, [String(run)])
        let (records, rejected) = state.imported
        return Report(run: run, process: process, workers: workerCount, chunks: workerTotals.chunks, records: records,
                      rejected: rejected, outcomes: state.outcomes, seconds: Date().timeIntervalSince(started),
                      runFinished: finished, stopped: stopped, leasesLost: workerTotals.leasesLost,
                      runRecords: Int(counts[0, 0]!)!, runRejected: Int(counts[0, 1]!)!)
    }
}

extension PostgresJoin {
    /// The batch path's writer for `spec` on `connection`, or nil when that path cannot write it.
    fileprivate static func batchWriter(store: PostgresStore, connection: PostgresConnection, spec: PipelineSpec,
                                        record: PostgresRunRecord, logger: Logger) throws -> PostgresBatchWriter? {
        do {
            let writer = try PostgresBatchWriter(store: store, connection: connection, rules: spec.mappings.mapValues(\.onConflict))
            writer.firstRowOfRun = record.firstRowOfRun
            return writer
        } catch {
            guard case .unsupported(let why) = error else { throw error }
            logger.debug("the batch path cannot write this pipeline: importing objects", metadata: ["reason": "\(why)"])
            return nil
        }
    }
}

/// A process's heartbeat, on a thread and connection of its own: every third of the
/// lease it marks the process alive and renews the leases of the chunks it holds.
final class Heartbeat: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(url: PostgresURL, process: String, leaseSeconds: Double, logger: Logger) {
        Thread.detachNewThread { [self] in
            defer { done.signal() }
            var connection: PostgresConnection?
            var last = Date.distantPast
            while !stopped.load(ordering: .relaxed) {
                if Date().timeIntervalSince(last) >= leaseSeconds / 3 {
                    last = Date()
                    do {
                        if connection == nil || connection?.isOK == false {
                            connection = try PostgresConnection(url)
                            // A beat that cannot finish within the lease is no beat.
                            try connection!.execute("SET statement_timeout = \(Int(leaseSeconds * 1000))")
                        }
                        try connection!.execute("UPDATE _ingest_processes SET heartbeat = now() WHERE id = $1", [process])
                        try connection!.execute("""
                            UPDATE _ingest_chunks SET lease_until = now() + make_interval(secs => $2)
                            WHERE left(owner, length($1) + 1) = $1 || '/' AND finished IS NULL
                            """, [process, String(leaseSeconds)])
                    } catch {
                        logger.warning("heartbeat failed; chunks held may be claimed by others when their lease ends", metadata: ["error": "\(error)"])
                        connection = nil
                    }
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        // A beat stuck on a dead network must not keep the process from ending.
        _ = done.wait(timeout: .now() + 5)
    }
}
