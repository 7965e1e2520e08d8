import Foundation
package import IngestJSON
import Synchronization
package import IngestStore
package import Logging
package import CoreMetrics

/// An import run on a PostgreSQL store, as `_ingest_runs.record` keeps it: everything a
/// process joining from another machine needs, the pipeline included.
struct PostgresRunRecord: Codable, Sendable {
    var feed: String
    var feedByteSize: Int
    /// The pipeline file's text, so every process maps records alike.
    var pipeline: String
    var pipelineSHA256: String
    var chunkCount: Int
    var chunkSize: Int
    var records: Int
    var saveEvery: Int
    /// How long a chunk stays claimed without a heartbeat before another process may take it.
    var leaseSeconds: Double
    /// The split feed's checksum (nil in runs registered before it was kept).
    var feedChecksum: String?
    /// False while the run's feed is being split (its chunks arrive as they are made);
    /// nil in runs registered whole, after their split.
    var splitFinished: Bool? = nil
    /// When the split last stored a chunk (seconds since 1970): a split that stops beating
    /// for longer than the lease is gone, and processes stop waiting for its chunks.
    var splitUpdated: Double? = nil
    /// Why the split stopped, when it failed (a malformed feed, say).
    var splitError: String? = nil
    /// The process answering for the chunks whose bytes are not in the database (stored
    /// empty, unfinished): the one whose split keeps them in its own chunk files and stores
    /// them only when other processes want work (`ChunkUploader`), or the one storing them
    /// after taking a gone process's split over. Nil when every chunk was stored as it was
    /// split; a finished run keeps the last keeper's name (it keeps nothing then).
    var splitProcess: String? = nil
    /// Where `splitProcess` keeps those chunks' files (absolute): a process that can read
    /// them there (the same machine, or a shared file system) claims them from the files,
    /// checked against their checksums, and needs none stored (`KeptChunkFiles`).
    var splitDirectory: String? = nil

    /// Whether every chunk of the run is stored.
    var isSplit: Bool { splitFinished != false }

    /// Run `number` in the terms of `RunAdmission`.
    func admitted(_ number: Int) -> RunAdmission.Recorded {
        RunAdmission.Recorded(number: number, feedByteSize: feedByteSize, feedChecksum: feedChecksum,
                              pipelineSHA256: pipelineSHA256, chunkSize: chunkSize)
    }
    /// Each entity's first row number made by this run (for counting duplicates).
    var firstRowOfRun: [String: Int64]
}

/// How an import on a PostgreSQL store runs (`PostgresImport.start`, `PostgresImport.join`).
package struct PostgresImportOptions: Sendable {
    /// Workers in this process, each with its own connection.
    package var workers: Int?
    package var saveEvery: Int?
    package var chunkSize: Int?
    /// Seconds a claimed chunk survives without its process's heartbeat (renewed every third of it).
    package var leaseSeconds: Double
    /// Leave the store's unfinished run of another feed as it is and start a new run.
    package var abandonRun: Bool
    /// Import the feed even when the store's last run imported the same feed with the same pipeline.
    package var again = false
    /// Where this process's split left the run's chunk files (`Started.chunksDirectory`):
    /// its workers read them there rather than from the database.
    package var localChunks: String?
    /// Claim the chunks the importing process keeps from its chunk files, when they can be
    /// read here (the default), rather than wait for it to store them in the database.
    package var readsKeptChunkFiles = true
    package var logger: Logger
    /// Where the run's metrics go (`Importer.Options.metrics`); nil for `MetricsSystem`'s.
    package var metrics: (any MetricsFactory)?
    /// A replay's links (`Importer.Options.replay`), recorded with the run it registers.
    package var replay: [Replay.Link]?
    /// The coordinator whose contexts hear of this process's saves (an importer's given
    /// one, a container's): the object path's workers save through it, and each batch
    /// write, committed on a worker's own connection, is posted to it.
    package var coordinator: PersistentStoreCoordinator?

    /// Rows in one binary `COPY` statement at most (nil: as the writer chooses by where the
    /// server is, `PostgresBatchWriter.rowsPerBinaryCopy(on:)`).
    package var rowsPerBinaryCopy: Int?

    package init(workers: Int? = nil, saveEvery: Int? = nil, chunkSize: Int? = nil, leaseSeconds: Double = 30,
                abandonRun: Bool = false, logger: Logger = Logger(label: "ingest.import", factory: { _ in SwiftLogNoOpLogHandler() })) {
        self.workers = workers
        self.saveEvery = saveEvery
        self.chunkSize = chunkSize
        self.leaseSeconds = leaseSeconds
        self.abandonRun = abandonRun
        self.logger = logger
    }
}

/// Imports on a PostgreSQL store, shared by many processes: `start` splits a feed and
/// registers its chunks in the store (their bytes stored in the database for every machine
/// that reaches it, or kept by the importing process until others want them: `split`);
/// `join` imports chunks until none is left.
package enum PostgresImport {
    /// What `start` did.
    package struct Started: Sendable {
        package var run: Int
        /// False when the store's unfinished run of this feed and pipeline was found instead.
        package var registered: Bool
        /// Whether the run's feed must (still) be split here: `split` registers its chunks as
        /// they are made, while this and other processes import them.
        package var needsSplit: Bool
        /// Where `split` puts the chunk files; this process's workers read them there
        /// instead of the database's copies (`PostgresImportOptions.localChunks`). The caller
        /// removes the directory when its import ends.
        package var chunksDirectory: String?
    }

    /// What `split` did.
    package struct Split: Sendable {
        package var chunks: Int
        package var records: Int
        package var bytes: Int
        package var seconds: Double
    }

    /// Registers `feed`, mapped by `pipeline` (the pipeline file's bytes), as a new run of
    /// the store at `url`, or finds the unfinished run of the same feed and pipeline. With
    /// `splitAlongside`, the chunks come after: the caller runs `split`, which stores each
    /// as it is made, while every process (this one included) imports them. Without it,
    /// the feed is split here, and every chunk is stored when this returns.
    /// - Throws: `PipelineError` for a bad pipeline; `ImportError` (`.feedUnreadable`,
    ///   `.unfinishedRun` for another feed's unfinished run, `.storeBusy`, `.alreadyImported`);
    ///   `PostgresError` when the store cannot be reached or written.
    package static func start(feed: String, pipeline: [UInt8], url: PostgresURL, options: PostgresImportOptions,
                             splitAlongside: Bool = false) throws -> Started {
        var started = try register(feed: feed, pipeline: pipeline, url: url, options: options)
        if !splitAlongside, started.needsSplit, let directory = started.chunksDirectory {
            defer { try? FileManager.default.removeItem(atPath: directory) }
            _ = try split(feed: feed, run: started.run, url: url, directory: directory, options: options)
            started.needsSplit = false
            started.chunksDirectory = nil
        }
        return started
    }

    @_optimize(none)
    private static func register(feed: String, pipeline: [UInt8], url: PostgresURL, options: PostgresImportOptions) throws -> Started {
        let spec = try PipelineSpec.parse(pipeline)
        if feed != "-", !HTTPByteSource.isURL(feed) {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: feed, isDirectory: &isDirectory)
            guard exists, !isDirectory.boolValue, FileManager.default.isReadableFile(atPath: feed) else {
                throw ImportError(.feedUnreadable(path: feed, exists: exists))
            }
        }
        let store = try PostgresStore(url: url, model: spec.model)
        let connection = try store.connect()
        let feedSize = FileOps.isReadOnce(feed) ? 0 : FileOps.fileSize(feed) ?? 0
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-split-\(UUID().uuidString)").path
        let chunkSize = options.chunkSize ?? spec.chunkSize
        let admission = RunAdmission(feed: feed, feedSize: feedSize, pipelineSHA256: spec.hash,
                                     keylessEntities: spec.keylessEntities, chunkSize: chunkSize, again: options.again)
        if let (run, record) = try latestUnfinished(connection) {
            // The run goes on with the chunks it was split into, unless another size was asked for.
            var continuing = admission
            if options.chunkSize == nil { continuing.chunkSize = record.chunkSize }
            // A split still to make (or to go on with) compares each chunk it makes with the stored one.
            let reasons = try continuing.reasons(continuing: record.admitted(run), splitWillCompare: !record.isSplit)
            if reasons.isEmpty || feed == "-" && record.feed == "-" && record.pipelineSHA256 == spec.hash {
                options.logger.info("continuing the store's unfinished run", metadata: ["run": "\(run)"])
                // A split that stopped (its process gone, or it failed) is made again here, and
                // so is one whose process kept chunks it did not store and is gone.
                let stopped = !record.isSplit && (record.splitError != nil || Date().timeIntervalSince1970 - (record.splitUpdated ?? 0) > record.leaseSeconds)
                let splitting = try stopped || record.isSplit && keptChunks(run: run, connection) > 0 && !keeperIsAlive(record, connection)
                return Started(run: run, registered: false, needsSplit: splitting, chunksDirectory: splitting ? directory : nil)
            }
            // A run that live processes write cannot be left: their saves would go on (and lose the new run's updates).
            let live = try connection.execute("""
                SELECT host || ' pid ' || pid FROM _ingest_processes
                WHERE run = $1 AND state = 'running' AND heartbeat > now() - make_interval(secs => $2) ORDER BY started
                """, [String(run), String(record.leaseSeconds)])
            if live.count > 0 {
                let names = try (0..<live.count).map { try live.text($0, 0) }.joined(separator: ", ")
                throw ImportError(.storeBusy(store: url.description, holder: "run \(run) of \(record.feed), by \(live.count) live process(es): \(names)"))
            }
            guard options.abandonRun else {
                throw ImportError(.unfinishedRun(store: url.description, run: run, feed: record.feed, reasons: reasons))
            }
            // A save in progress holds the run's row (see `ChunkLease.advance`): wait for it a
            // little, never for a process stopped mid-save (its heartbeat stale, its lock kept).
            do {
                try connection.transaction {
                    try connection.execute("SET LOCAL lock_timeout = '5s'")
                    // FOR UPDATE waits for the saves that hold the row FOR KEY SHARE (a plain update would not).
                    try connection.execute("SELECT 1 FROM _ingest_runs WHERE run = $1 FOR UPDATE", [String(run)])
                    try connection.execute("UPDATE _ingest_runs SET state = 'abandoned', ended = now() WHERE run = $1", [String(run)])
                }
                HTTPSpoolDirectory.discard(url: url, run: run, feed: record.feed, logger: options.logger)
            } catch let error as PostgresError where error.sqlState == .lockNotAvailable {
                throw ImportError(.storeBusy(store: url.description, holder:
                    "run \(run): a process that no longer beats is stopped in the middle of a save and holds it; end that process, then import again"))
            }
        }

        // The same feed and pipeline as the finished last run: nothing to do (see `RunAdmission`).
        let last = try connection.execute("SELECT run, state, record FROM _ingest_runs ORDER BY run DESC LIMIT 1")
        if last.count == 1, last[0, 1] == "finished",
           let record = try? JSONDecoder().decode(PostgresRunRecord.self, from: Data(try last.text(0, 2).utf8)) {
            try admission.checkNotImported(record.admitted(try last.int(0, 0)), store: url.description)
        }
        let run: Int? = try connection.transaction {
            // One run is registered at a time; the row numbers it starts from are taken inside.
            try connection.execute("SELECT pg_advisory_xact_lock(727002)")
            // Another `import` may have registered a run meanwhile.
            if let (other, _) = try latestUnfinished(connection) {
                options.logger.info("another process registered a run meanwhile; joining it", metadata: ["run": "\(other)"])
                return nil
            }
            let run = try connection.execute("SELECT coalesce(max(run), 0) + 1 FROM _ingest_runs").int(0, 0)
            var firstRows: [String: Int64] = [:]
            for entity in spec.model.entities {
                let next = try connection.execute("SELECT coalesce(max(\"_pk\"), 0) + 1 FROM \(spec.model.storageTable(of: entity.name))")
                firstRows[entity.name] = try next.int64(0, 0)
            }
            // Absolute, so a process in another directory of this machine can split it again.
            let recordedFeed = feed == "-" || HTTPByteSource.isURL(feed) ? feed : URL(fileURLWithPath: feed).standardizedFileURL.path
            var record = PostgresRunRecord(feed: recordedFeed, feedByteSize: feedSize, pipeline: String(decoding: pipeline, as: UTF8.self),
                                           pipelineSHA256: spec.hash, chunkCount: 0, chunkSize: chunkSize, records: 0,
                                           saveEvery: options.saveEvery ?? spec.saveEvery, leaseSeconds: options.leaseSeconds,
                                           feedChecksum: nil, firstRowOfRun: firstRows)
            record.splitFinished = false
            record.splitUpdated = Date().timeIntervalSince1970
            try connection.execute("INSERT INTO _ingest_runs (run, state, record) VALUES ($1, 'running', $2)",
                                   [String(run), String(decoding: try JSONEncoder().encode(record), as: UTF8.self)])
            if let links = options.replay {
                try connection.execute("INSERT INTO \"_ingest_metadata\" (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                                       [Replay.linksKey(run: run), String(decoding: try JSONEncoder().encode(links), as: UTF8.self)])
            }
            return run
        }
        guard let run else {
            // Joined as a run of its own feed or refused as another's, by the checks above.
            return try register(feed: feed, pipeline: pipeline, url: url, options: options)
        }
        options.logger.info("run registered", metadata: ["run": "\(run)"])
        return Started(run: run, registered: true, needsSplit: true, chunksDirectory: directory)
    }

    /// Splits the feed of `run` (registered by `start`) into `directory`, registering each
    /// chunk in the database as soon as it is in place, with the run's record: the processes
    /// importing the run claim chunks while the split goes on. A chunk registered by an
    /// earlier, stopped split must be the same (its checksum), or the feed changed. At the
    /// end the run records its feed's checksum and size; an empty feed's run is finished at
    /// once. A split that fails records why, so that no process waits for its chunks.
    ///
    /// With `keeping`, the process of that ID keeps the chunks: their bytes stay in its chunk
    /// files, for its own workers, and reach the database only when other processes want
    /// work (`ChunkUploader`), so an import no other process joins stores no chunk. Without
    /// it every chunk's bytes are stored (compressed), those of an earlier split's kept
    /// chunks included.
    /// - Throws: `FeedError`, `SplitError`, `IOError` from the split (the reason is
    ///   recorded in the run too); `ImportError` for a feed that changed; `PostgresError`.
    package static func split(feed: String, run: Int, url: PostgresURL, directory: String, options: PostgresImportOptions,
                             cancellation: SplitCancellation? = nil, keeping process: String? = nil,
                             onStored: (@Sendable (ChunkInfo, _ written: Bool) -> Void)? = nil) throws -> Split {
        let connection = try PostgresConnection(url)
        guard let (_, found) = try record(of: run, connection) else { throw ImportError(.noImport(store: url.description)) }
        var record = found
        let keeps = process != nil
        if keeps {
            // Before any chunk: the chunks a gone process kept are this one's to answer for now.
            record.splitProcess = process
            record.splitDirectory = URL(fileURLWithPath: directory).standardizedFileURL.path
            try connection.execute("UPDATE _ingest_runs SET record = $2 WHERE run = $1",
                                   [String(run), String(decoding: try JSONEncoder().encode(record), as: UTF8.self)])
        }
        let spec = try PipelineSpec.parse(Array(record.pipeline.utf8), strict: false)
        let started = Date()
        options.logger.info("splitting the feed", metadata: ["feed": "\(feed)", "chunk size": "\(record.chunkSize)"])
        var splitOptions = SplitOptions(feed: spec.feedOptions, chunkSize: record.chunkSize, form: spec.recordForm)
        // Stored or kept, the chunks are registered in the database; the files need no flush
        // (a process that outlives this one splits the feed again when it needs them).
        splitOptions.durable = false
        // The chunks this process keeps are read by its own workers, which step over members by their ends.
        splitOptions.writesMemberEnds = keeps
        let splitter = Splitter(feedPath: feed, directory: directory, options: splitOptions)
        // A feed over HTTP is kept where a later split of this run, on this machine, finds it.
        let spool = HTTPByteSource.isURL(feed) ? HTTPSpoolDirectory.open(url: url, run: run, feed: feed, logger: options.logger) : nil
        defer { spool?.close() }
        splitter.spoolDirectory = spool?.path
        // A kept chunk's bytes stay in its file: nothing is made of them here.
        if keeps {
            splitter.chunkEncoder = { DiscardingChunkEncoder() }
        } else {
            splitter.chunkEncoder = { ChunkCompression.Encoder() }
        }
        let stored = Mutex<(chunks: Int, records: Int, bytes: Int, failure: (any Error)?)>((0, 0, 0, nil))
        let recordBox = Mutex(record)
        let stopper = splitter.cancellation
        let watcher = cancellation
        // The chunk callbacks come one at a time on the split's writer thread, and end before
        // `run()` returns: the connection is theirs until then.
        let shared = UncheckedSendable(connection)
        splitter.onChunkBytes = { chunk, written, compressed in
            let connection = shared.value
            guard stored.withLock({ $0.failure == nil }) else { return }
            do {
                if watcher?.isCancelled == true { throw SplitError.interrupted(directory: directory, chunks: chunk.index - 1) }
                try connection.transaction {
                    let inserted = try connection.execute("""
                        INSERT INTO _ingest_chunks (run, number, first_record, records, checksum, bytes) VALUES ($1, $2, $3, $4, $5, $6)
                        ON CONFLICT (run, number) DO NOTHING RETURNING checksum
                        """, [String(run), String(chunk.index), String(chunk.firstRecord), String(chunk.records), chunk.checksum],
                        bytes: keeps ? [] : compressed)
                    if inserted.count == 0 {
                        let earlier = try connection.execute("SELECT checksum FROM _ingest_chunks WHERE run = $1 AND number = $2",
                                                             [String(run), String(chunk.index)])
                        guard earlier.count == 1, earlier[0, 0] == chunk.checksum else {
                            throw ImportError(.unfinishedRun(store: url.description, run: run, feed: feed,
                                                             reasons: ["the feed differs from the one its chunks were split from (\(chunk.file) comes out different)"]))
                        }
                        if !keeps {
                            // A chunk an earlier split kept (its process gone): stored now, for anyone.
                            try connection.execute("""
                                UPDATE _ingest_chunks SET bytes = $3
                                WHERE run = $1 AND number = $2 AND finished IS NULL AND octet_length(bytes) = 0
                                """, [String(run), String(chunk.index)], bytes: compressed)
                        }
                    }
                    let encoded = try recordBox.withLock { record in
                        record.chunkCount = max(record.chunkCount, chunk.index)
                        record.records = max(record.records, chunk.firstRecord + chunk.records)
                        record.splitUpdated = Date().timeIntervalSince1970
                        return String(decoding: try JSONEncoder().encode(record), as: UTF8.self)
                    }
                    try connection.execute("UPDATE _ingest_runs SET record = $2 WHERE run = $1", [String(run), encoded])
                    // Waiting claims wake at this commit (`PostgresChunkSource`).
                    try PostgresChunkSource.notify(connection)
                }
                stored.withLock { $0.chunks += 1; $0.bytes += chunk.byteSize }
                // Its local file now holds what the database holds under this number.
                onStored?(chunk, written)
            } catch {
                stored.withLock { $0.failure = error }
                stopper.cancel()
            }
        }
        let manifest: SplitManifest
        do {
            manifest = try splitter.run().manifest
            if let failure = stored.withLock({ $0.failure }) { throw failure }
        } catch {
            let reason = stored.withLock { $0.failure } ?? error
            record = recordBox.withLock { $0 }
            let stopped = reason is SplitError && cancellation?.isCancelled == true
            if stopped || (reason as? PostgresError)?.isConnectionLoss == true {
                // Stopped by a signal, or the server went away, not the feed: any process that can
                // read the feed may take the split over at once (once the server is back).
                record.splitUpdated = 0
                if let fresh = try? PostgresConnection(url) {
                    _ = try? fresh.execute("UPDATE _ingest_runs SET record = $2 WHERE run = $1",
                                           [String(run), String(decoding: try JSONEncoder().encode(record), as: UTF8.self)])
                    _ = try? PostgresChunkSource.notify(fresh)
                }
            } else {
                record.splitError = "\(reason)"
                _ = try? connection.execute("UPDATE _ingest_runs SET record = $2 WHERE run = $1",
                                            [String(run), String(decoding: try JSONEncoder().encode(record), as: UTF8.self)])
                _ = try? PostgresChunkSource.notify(connection)
            }
            throw reason
        }
        // Read to its end: every chunk is stored, and no split of this run needs the download again.
        spool?.remove()
        // A split that found its directory complete wrote nothing new: its chunks are stored already.
        record = recordBox.withLock { $0 }
        record.chunkCount = manifest.chunks.count
        record.records = manifest.totalRecords
        record.feedChecksum = manifest.feed.checksum
        if FileOps.isReadOnce(feed) { record.feedByteSize = manifest.feed.byteSize ?? 0 }
        record.splitFinished = true
        record.splitUpdated = Date().timeIntervalSince1970
        record.splitError = nil
        if !keeps { (record.splitProcess, record.splitDirectory) = (nil, nil) }
        try connection.execute("UPDATE _ingest_runs SET record = $2, state = CASE WHEN $3 THEN 'finished' ELSE state END, ended = CASE WHEN $3 THEN now() ELSE ended END WHERE run = $1",
                               [String(run), String(decoding: try JSONEncoder().encode(record), as: UTF8.self), manifest.chunks.isEmpty ? "t" : "f"])
        // After that commit: claims waiting for more chunks find the split ended.
        try PostgresChunkSource.notify(connection)
        let summary = stored.withLock { $0 }
        options.logger.info("split finished", metadata: ["run": "\(run)", "chunks": "\(manifest.chunks.count)", "stored": "\(summary.chunks)"])
        return Split(chunks: manifest.chunks.count, records: manifest.totalRecords, bytes: summary.bytes,
                     seconds: Date().timeIntervalSince(started))
    }

    /// Run `run`'s record.
    static func record(of run: Int, _ connection: PostgresConnection) throws -> (Int, PostgresRunRecord)? {
        try storedRecord(of: run, connection).map { (run, $0.record) }
    }

    /// Run `run`'s record, with its text as stored (for a compare-and-set on it).
    static func storedRecord(of run: Int, _ connection: PostgresConnection) throws -> (text: String, record: PostgresRunRecord)? {
        let rows = try connection.execute("SELECT record FROM _ingest_runs WHERE run = $1", [String(run)])
        guard rows.count == 1, let text = rows[0, 0] else { return nil }
        return (text, try JSONDecoder().decode(PostgresRunRecord.self, from: Data(text.utf8)))
    }

    /// The newest run still running, with its record.
    static func latestUnfinished(_ connection: PostgresConnection) throws -> (Int, PostgresRunRecord)? {
        let rows = try connection.execute("SELECT run, record FROM _ingest_runs WHERE state = 'running' ORDER BY run DESC LIMIT 1")
        guard rows.count == 1 else { return nil }
        return (try rows.int(0, 0), try JSONDecoder().decode(PostgresRunRecord.self, from: Data(try rows.text(0, 1).utf8)))
    }

    /// The pipeline of `url`'s newest run, or nil when no import has run.
    /// - Throws: `PostgresError` when the store cannot be read.
    package static func newestPipeline(url: PostgresURL) throws -> String? {
        try newestRun(try PostgresConnection(url))?.record.pipeline
    }

    /// The pipeline of `url`'s newest run, with what that run counted that it does not map;
    /// nil when no import has run.
    /// - Throws: `PostgresError` when the store cannot be read.
    package static func latestPipeline(url: PostgresURL) throws -> (text: String, unmapped: MemberCensus)? {
        let connection = try PostgresConnection(url)
        guard let (run, record) = try newestRun(connection) else { return nil }
        return (record.pipeline, try members(run: run, connection))
    }

    /// The newest run and its record, finished or not; nil in a database no import ran in.
    private static func newestRun(_ connection: PostgresConnection) throws -> (run: Int, record: PostgresRunRecord)? {
        guard try connection.execute("SELECT to_regclass('_ingest_runs') IS NOT NULL")[0, 0] == "t" else { return nil }
        let rows = try connection.execute("SELECT run, record FROM _ingest_runs ORDER BY run DESC LIMIT 1")
        guard rows.count == 1, let run = Int(rows[0, 0] ?? ""),
              let record = try? JSONDecoder().decode(PostgresRunRecord.self, from: Data((rows[0, 1] ?? "").utf8)) else { return nil }
        return (run, record)
    }

    /// The census of run `run`'s saves: the members its records held that the pipeline does
    /// not map (empty for a store made before the census was kept).
    static func members(run: Int, _ connection: PostgresConnection) throws -> MemberCensus {
        // A reader may open a store made before the census, which no writer has opened since.
        guard try connection.execute("SELECT to_regclass('_ingest_members') IS NOT NULL")[0, 0] == "t" else { return MemberCensus() }
        let rows = try connection.execute("SELECT census FROM _ingest_members WHERE run = $1", [String(run)])
        let decoder = JSONDecoder()
        var total = MemberCensus()
        for row in 0..<rows.count {
            guard let census = try? decoder.decode(MemberCensus.self, from: Data(try rows.text(row, 0).utf8)) else {
                throw PostgresError.server("a census of unmapped members of run \(run) in _ingest_members is damaged (not the JSON Ingest wrote)", sqlState: .dataCorrupted)
            }
            total = total + census
        }
        return total
    }
}
