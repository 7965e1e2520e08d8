import Foundation
import IngestJSON
import IngestStore
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL store's side of one process's part in an import run (`PostgresJoin`): the
/// run is recorded in `_ingest_runs`, which any number of processes share; this process
/// registers itself in `_ingest_processes` and keeps a heartbeat, its workers claim chunks
/// with `SKIP LOCKED` leases, and, when it registered the run, its split registers each
/// chunk beside them, keeping its bytes for its own workers and storing them for others
/// (`PostgresImport.split(keeping:)`, `ChunkUploader`).
struct PostgresRunStore: RunStore {
    let join: PostgresJoin
    /// The run to join; nil for the newest unfinished one.
    let run: Int?
    /// The split this process makes beside its workers, if any.
    let split: PostgresJoin.SplitAlongside?

    @_optimize(none)
    func begin(started: Double) throws -> PostgresRunSession {
        let (url, options) = (join.url, join.options)
        let connection = try PostgresConnection(url)
        // A database nothing was imported into says so, not what SQL it cannot run.
        guard try connection.execute("SELECT to_regclass('_ingest_runs') IS NOT NULL")[0, 0] == "t" else {
            throw PostgresError.notAStore(target: url.description)
        }
        let found: (Int, PostgresRunRecord)?
        if let wanted = run {
            let rows = try connection.execute("SELECT record FROM _ingest_runs WHERE run = $1 AND state = 'running'", [String(wanted)])
            found = rows.count == 1 ? (wanted, try JSONDecoder().decode(PostgresRunRecord.self, from: Data(try rows.text(0, 0).utf8))) : nil
        } else {
            found = try PostgresImport.latestUnfinished(connection)
        }
        guard let (run, record) = found else { throw ImportError(.noImport(store: url.description)) }
        let spec = try PipelineSpec.parse(Array(record.pipeline.utf8), strict: false)
        let store = try PostgresStore(url: url, model: spec.model)
        let workerCount = min(PipelineSpec.maxWorkers, max(1, options.workers ?? spec.workers ?? ProcessInfo.processInfo.activeProcessorCount))
        let host = ProcessInfo.processInfo.hostName
        let pid = Int(ProcessInfo.processInfo.processIdentifier)
        let process = "\(host):\(pid):\(UUID().uuidString.prefix(8).lowercased())"
        // A joined process that can see the importing process's chunk directory reads the chunks
        // it keeps there; checked chunk by chunk, it falls back to the database at the first miss.
        let keptFiles = split == nil && options.localChunks == nil && options.readsKeptChunkFiles
            ? record.splitDirectory.flatMap { KeptChunkFiles(directory: $0, process: process, logger: options.logger) } : nil
        try connection.execute("INSERT INTO _ingest_processes (id, run, host, pid, workers, reads_kept) VALUES ($1, $2, $3, $4, $5, $6)",
                               [process, String(run), host, String(pid), String(workerCount), keptFiles == nil ? "f" : "t"])
        try PostgresCommitTurns.label(connection, process: process)
        options.logger.info("joined the import", metadata: ["run": "\(run)", "process": "\(process)", "workers": "\(workerCount)"])
        let state = RunState(rejected: 0, workers: workerCount, started: started,
                             metrics: ImportMetrics(store: "postgresql", entity: spec.recordEntity, factory: options.metrics))
        let join = self.join
        let turns = PostgresCommitTurns(url: url, run: run, logger: options.logger,
                                        shouldStop: { join.cancellation.load(ordering: .relaxed) }, hasFailed: { state.failed })
        let splitStage = split.map { PostgresSplitStage($0, run: run, process: process, workers: workerCount, metrics: state.metrics,
                                                       leaseSeconds: record.leaseSeconds, join: join) }
        let workers = PostgresRunWorkers(join: join, store: store, spec: spec, run: run, record: record, process: process,
                                         localChunks: split?.directory ?? options.localChunks, localSplit: splitStage, keptFiles: keptFiles,
                                         turns: turns, state: state)
        return PostgresRunSession(join: join, connection: connection, run: run, record: record, process: process,
                                  heartbeat: Heartbeat(url: url, process: process, leaseSeconds: record.leaseSeconds, logger: options.logger),
                                  split: splitStage, state: state, workers: workers, workerCount: workerCount,
                                  saveEvery: record.saveEvery, started: Date())
    }
}

/// A PostgreSQL run under way in this process.
struct PostgresRunSession: RunSession {
    let join: PostgresJoin
    let connection: PostgresConnection
    let run: Int
    let record: PostgresRunRecord
    let process: String
    let heartbeat: Heartbeat
    let split: PostgresSplitStage?
    let state: RunState
    let workers: PostgresRunWorkers
    let workerCount: Int
    let saveEvery: Int
    let started: Date
    var logger: Logger { join.options.logger }

    /// The chunk files of a keeping process that is gone (killed, or stopped while others
    /// imported), once the run is finished: its temporary directory, when it is on this machine
    /// (found by probing: each killed import left one behind, half a gigabyte a million records).
    private func removeGoneKeepersFiles(_ record: PostgresRunRecord) {
        guard let directory = record.splitDirectory,
              let keeper = record.splitProcess, keeper != process,
              URL(fileURLWithPath: directory).lastPathComponent.hasPrefix("ingest-split-"),
              (try? PostgresImport.keeperIsAlive(record, connection)) == false,
              let names = try? FileManager.default.contentsOfDirectory(atPath: directory),
              names.allSatisfy(Splitter.isSplitFile) else { return }
        do {
            try Self.removeSplitFiles(names, in: directory)
            logger.info("removed the chunk files of the process that kept them, which is gone", metadata: ["directory": "\(directory)"])
        } catch {
            logger.warning("the chunk files of the process that kept them, which is gone, could not be removed", metadata: ["directory": "\(directory)", "error": "\(error)"])
        }
    }

    /// Removes a gone keeper's split files (`names`, each a split file's name) and their
    /// directory. File by file, not `FileManager.removeItem`: another process that finds the
    /// keeper gone removes the same files at the same time, and what it removed first is
    /// not a failure here (`removeItem` stopped at it). The directory is opened without
    /// following a link and must be this user's; each file is looked at and removed through
    /// it, so a link at the directory's name, or among its files, is never followed (a link
    /// or directory among them, not Ingest's, is left, and so is the directory then).
    /// - Throws: `IOError` when the directory is not this user's, or a file or the directory
    ///   cannot be removed.
    static func removeSplitFiles(_ names: [String], in directory: String) throws {
        let descriptor = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return }
            throw IOError(errno: errno, operation: "open", path: directory)
        }
        defer { Glibc.close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_uid == geteuid() else {
            throw IOError(errno: EPERM, operation: "remove (not this user's)", path: directory)
        }
        try FileOps.removeRegularFiles(names, inDirectory: descriptor, path: directory)
        if rmdir(directory) != 0 && errno != ENOENT { throw IOError(errno: errno, operation: "remove", path: directory) }
    }

    func start() {
        heartbeat.start()
        split?.start()
    }

    @_optimize(none)
    func end(totals workerTotals: ChunkWorker.Totals) throws -> PostgresJoin.Report {
        let splitOutcome = split?.wait()
        split?.uploader.stop()
        let stopped = join.cancellation.load(ordering: .relaxed)
        if stopped, state.failure == nil, let uploader = split?.uploader {
            // Stopped at a signal: the processes still importing get what only this one has,
            // while its heartbeat still says it is alive (they wait for it meanwhile).
            do { try uploader.storeKept(connection) } catch {
                logger.warning("the chunks this process kept could not all be stored; a process that can read the feed stores them", metadata: ["error": "\(error)"])
            }
        }
        heartbeat.stop()
        // A failed split stopped the workers at their next save; it is the run's failure in
        // this process when they failed too.
        let splitFailure = splitOutcome?.failure
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
                    if let fresh = try? PostgresConnection(join.url), (try? markFailed(fresh)) != nil { break }
                    // A backoff between reconnects (the server may be restarting), not a poll.
                    if attempt < 9 { Thread.sleep(forTimeInterval: 0.5) }
                }
            }
            throw splitFailure ?? error
        }
        let finished = try ChunkLease.unfinished(run: run, connection) == 0 && (PostgresImport.record(of: run, connection)?.1.isSplit ?? true)
        if finished {
            let replayFeed: String? = try connection.transaction {
                let ended = try connection.execute("UPDATE _ingest_runs SET state = 'finished', ended = now() WHERE run = $1 AND state = 'running' RETURNING record",
                                                   [String(run)])
                // A replay's finish removes the rejects it replayed, with its record (its own
                // rejects stand for those that failed again); once, by the process that finished it.
                guard ended.count == 1, try connection.execute("""
                    DELETE FROM _ingest_rejects j
                    USING json_array_elements((SELECT value FROM "_ingest_metadata" WHERE key = $1)::json) AS e(link)
                    WHERE j.run = (e.link->'source'->>'run')::integer AND j.chunk = (e.link->'source'->>'chunk')::integer
                      AND j.index = (e.link->'source'->>'index')::integer
                    RETURNING 1
                    """, [Replay.linksKey(run: run)]).count > 0 else { return nil }
                return try? JSONDecoder().decode(PostgresRunRecord.self, from: Data(try ended.text(0, 0).utf8)).feed
            }
            if let replayFeed { Importer.removeReplayFiles(feed: replayFeed, pipeline: nil) }
            if let (_, record) = try? PostgresImport.record(of: run, connection) {
                removeGoneKeepersFiles(record)
                HTTPSpoolDirectory.discard(url: join.url, run: run, feed: record.feed, logger: logger)
            }
        }
        try connection.execute("UPDATE _ingest_processes SET state = $2, heartbeat = now() WHERE id = $1",
                               [process, stopped ? "stopped" : "finished"])
        // Chunks this process still holds go back to the pool at once, not when the lease ends.
        try connection.execute("""
            UPDATE _ingest_chunks SET owner = NULL, lease_until = NULL WHERE left(owner, length($1) + 1) = $1 || '/' AND finished IS NULL
            """, [process])
        if !finished, !stopped,
           try connection.execute("SELECT state FROM _ingest_runs WHERE run = $1", [String(run)])[0, 0] == "abandoned" {
            throw ImportError("run \(run) was abandoned by another import (--abandon-run) while this process imported it; its saves stopped there")
        }
        if !finished, !stopped, let left = try ChunkLease.orphaned(run: run, endingProcess: process, connection) {
            // This process's workers found nothing left to claim, yet chunks are left that no
            // live process imports: ending quietly would report the run as going on elsewhere.
            throw ImportError("run \(run) is not finished: \(left) chunk(s) are left and no other process is importing them; continue with: ingest join \(ShellWord.quoted(connection.target))")
        }
        let counts = try connection.execute("""
            SELECT coalesce(sum(done), 0), (SELECT count(*) FROM _ingest_rejects WHERE run = $1) FROM _ingest_chunks WHERE run = $1
            """, [String(run)])
        let (records, rejected) = state.imported
        return PostgresJoin.Report(run: run, process: process, workers: workerCount, chunks: workerTotals.chunks, records: records,
                                   rejected: rejected, outcomes: state.outcomes, seconds: Date().timeIntervalSince(started),
                                   runFinished: finished, stopped: stopped, leasesLost: workerTotals.leasesLost,
                                   runRecords: try counts.int(0, 0), runRejected: try counts.int(0, 1),
                                   members: try PostgresImport.members(run: run, connection),
                                   split: splitOutcome.flatMap { try? $0.get() }, splitFailure: splitFailure,
                                   retries: workerTotals.retries, chunksGivenBack: workerTotals.yielded)
    }
}

/// The workers' side of a PostgreSQL run: each worker claims chunks on a connection of its
/// own, and writes through the batch path when the pipeline allows it, else through a
/// private context.
struct PostgresRunWorkers: RunWorkers {
    let join: PostgresJoin
    let store: PostgresStore
    let spec: PipelineSpec
    let run: Int
    let record: PostgresRunRecord
    let process: String
    /// Where this process's split leaves the run's chunk files: read there, not from the database.
    let localChunks: String?
    /// The split writing `localChunks` in this process, when it does (`PostgresChunkSource`).
    let localSplit: PostgresSplitStage?
    /// The importing process's chunk files, when this joined process reads them.
    let keptFiles: KeptChunkFiles?
    let turns: PostgresCommitTurns
    let state: RunState
    /// What this process's writers remember of stored objects, and their last commit: shared,
    /// since the run's saves commit one after another in feed order.
    let knownObjects = PostgresKnownObjects()
    let commits = PostgresProcessCommits()

    func makeWorker(_ number: Int, _ logger: Logger) throws -> (source: any ChunkSource, path: ChunkWorker.Path) {
        let owner = "\(process)/\(number + 1)"
        let connection = try store.connect()
        try PostgresCommitTurns.label(connection, process: process)
        let (store, run, record, localChunks, split, keptFiles, turns) = (store, run, record, localChunks, localSplit, keptFiles, turns)
        func source(_ connection: PostgresConnection) -> PostgresChunkSource {
            PostgresChunkSource(connection: connection, url: store.url, run: run, record: record, owner: owner,
                                localChunks: localChunks, localSplit: split, keptFiles: keptFiles, turns: turns, logger: logger)
        }
        if let writer = try batchWriter(connection: connection, logger: logger),
           let rows = RowMapper(mapper: RecordMapper(spec: spec), inserter: writer) {
            if spec.lineage { rows.lineageRun = run }
            // A save need not wait for its WAL to reach the disk: its rows and its chunk's marker
            // commit together, so a server crash can only lose whole saves, and their chunks are
            // imported again from the marker that survived. What this process reports as done is
            // made durable by its last statement (`end`), an ordinary commit, which flushes the
            // WAL of every save before it.
            try connection.execute("SET synchronous_commit = off")
            // Claims and chunk bytes on a connection of their own while this one writes.
            let claims = try store.connect()
            try PostgresCommitTurns.label(claims, process: process)
            let chunkWriter = PostgresChunkWriter(writer: writer, connection: connection, run: run, owner: owner, process: process,
                                                  leaseSeconds: record.leaseSeconds, logger: logger)
            chunkWriter.observer = join.options.coordinator
            chunkWriter.turns = turns
            chunkWriter.commits = commits
            writer.known = knownObjects
            return (source(claims), .batch(chunkWriter, rows))
        }
        // Discriminators, to-many mappings, the reject rule, links to itself: objects in a context.
        let coordinator: PersistentStoreCoordinator
        if let given = join.options.coordinator {
            // Its `recordsHistory` follows the pipeline for the run (`Importer.run`).
            coordinator = given
        } else {
            coordinator = try PersistentStoreCoordinator(opened: store)
            coordinator.recordsHistory = spec.history
        }
        let bookkeeping = LeaseBookkeeping(run: run, owner: owner, process: process, leaseSeconds: record.leaseSeconds)
        let context = ObjectContext(coordinator: coordinator, name: "join-\(number + 1)")
        let importer = ImportWorker(context: context, spec: spec, bookkeeping: bookkeeping, firstRowOfRun: record.firstRowOfRun)
        importer.logger = logger
        // The object path writes through the context's coordinator: the connection is the source's.
        return (source(connection), .objects(importer))
    }

    func saved(worker: Int, _ result: ImportWorker.ChunkResult) throws {
        _ = state.saved(result, worker: worker)
        join.progress?({ [state] in state.progress(counts: [:], elapsed: state.elapsed, isFinal: false) })
    }

    func stopsClaiming() -> Bool { join.cancellation.load(ordering: .relaxed) }

    func workersFailed() { join.splitCancellation.cancel() }

    /// The batch path's writer for the run's pipeline on `connection`, or nil when that path cannot write it.
    private func batchWriter(connection: PostgresConnection, logger: Logger) throws -> PostgresBatchWriter? {
        do {
            let writer = try PostgresBatchWriter(store: store, connection: connection, rules: spec.mappings.mapValues(\.onConflict))
            writer.firstRowOfRun = record.firstRowOfRun
            if let rows = join.options.rowsPerBinaryCopy { writer.rowsPerBinaryCopy = max(1, rows) }
            // What a write changed is gathered for its history, and for the notice a given
            // coordinator's contexts merge.
            writer.recordsHistory = spec.history || join.options.coordinator != nil
            writer.logsHistory = spec.history
            return writer
        } catch {
            guard case .unsupported(let why) = error else { throw error }
            logger.debug("the batch path cannot write this pipeline: importing objects", metadata: ["reason": "\(why)"])
            return nil
        }
    }
}

/// The split a process that registered a run makes beside its workers, on a thread of its
/// own (`PostgresImport.split`): a failure stops this process's workers at their next save;
/// a stop asked for (`PostgresJoin.cancel`) is no failure.
final class PostgresSplitStage: Sendable {
    private let outcome = Mutex<Result<PostgresImport.Split, any Error>?>(nil)
    private let thread = ManagedThread(name: "ingest.split")
    private let split: PostgresJoin.SplitAlongside
    private let run: Int
    private let process: String
    private let join: PostgresJoin
    private let metrics: ImportMetrics

    /// The checksum of each chunk file this split wrote and found the database holding too.
    let localSums = Locked<[Int: String]>([:])
    /// The last chunk this split wrote (0 before the first): it writes them in order, so every
    /// chunk up to it is in this process's chunk files.
    let lastWritten = Locked<Int>(0)
    /// The chunks whose files this split wrote, not found from an earlier one: their
    /// `MemberEnds` are beside them when the split keeps its chunks (a feed read once has none).
    let wroteFiles = Locked<Set<Int>>([])
    /// Stores the chunks this split keeps when other processes want work.
    let uploader: ChunkUploader

    /// The split of `process`, which keeps its chunks (`PostgresImport.split(keeping:)`) for
    /// its `workers`, storing them only for other processes; it runs once started.
    init(_ split: PostgresJoin.SplitAlongside, run: Int, process: String, workers: Int, metrics: ImportMetrics,
         leaseSeconds: Double, join: PostgresJoin) {
        (self.split, self.run, self.process, self.join, self.metrics) = (split, run, process, join, metrics)
        let (sums, written) = (localSums, lastWritten)
        uploader = ChunkUploader(url: join.url, run: run, process: process, directory: split.directory, ownWorkers: workers,
                                 leaseSeconds: leaseSeconds, sums: { number in sums.withLock { $0[number] } },
                                 lastWritten: { written.withLock { $0 } },
                                 logger: join.options.logger)
    }

    /// Starts the split on the stage's thread, and the uploader of the chunks it keeps.
    func start() {
        uploader.start()
        let (split, run, process, join) = (split, run, process, join)
        thread.start { [self] _ in
            var result = Result {
                // A feed read once (a pipe, standard input) cannot be split again by whoever
                // outlives this process: its chunks are all stored, as they are made.
                try PostgresImport.split(feed: split.feed, run: run, url: join.url, directory: split.directory,
                                         options: join.options, cancellation: join.splitCancellation,
                                         keeping: FileOps.isReadOnce(split.feed) ? nil : process) { [self] chunk, wrote in
                    metrics.split(chunk)
                    localSums.withLock { $0[chunk.index] = chunk.checksum }
                    if wrote { wroteFiles.withLock { _ = $0.insert(chunk.index) } }
                    lastWritten.withLock { $0 = max($0, chunk.index) }
                }
            }
            if case .failure(let error) = result {
                if case SplitError.interrupted = error, join.splitCancellation.isCancelled {
                    result = .failure(SplitStopped())
                } else if error is FeedError {
                    // A malformed feed: every chunk before the break is stored (or kept here), and the
                    // workers of every process import them all before they meet the split's error, so
                    // how much a run commits never depends on timing (as on SQLite).
                } else {
                    // Nothing more will come to import: the workers stop at their next save.
                    join.cancellation.store(true, ordering: .relaxed)
                }
            }
            outcome.withLock { $0 = result }
        }
    }

    /// Waits for the split; what it did, or why it failed (nil when it was asked to stop).
    func wait() -> Result<PostgresImport.Split, any Error>? {
        thread.join()
        guard let result = outcome.withLock({ $0 }) else { return nil }
        if case .failure(let error) = result, error is SplitStopped { return nil }
        return result
    }

    private struct SplitStopped: Error {}
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
