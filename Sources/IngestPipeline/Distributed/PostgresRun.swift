import Foundation
import IngestJSON
public import IngestStore
public import Logging

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
    /// Each entity's first row number made by this run (for counting duplicates).
    var firstRowOfRun: [String: Int64]
}

/// How an import on a PostgreSQL store runs (`PostgresImport.start`, `PostgresImport.join`).
public struct PostgresImportOptions: Sendable {
    /// Workers in this process, each with its own connection.
    public var workers: Int?
    public var saveEvery: Int?
    public var chunkSize: Int?
    /// Seconds a claimed chunk survives without its process's heartbeat (renewed every third of it).
    public var leaseSeconds: Double
    /// Leave the store's unfinished run of another feed as it is and start a new run.
    public var abandonRun: Bool
    /// Import the feed even when the store's last run imported the same feed with the same pipeline.
    public var again = false
    /// Where this process's split left the run's chunk files (`Started.chunksDirectory`):
    /// its workers read them there rather than from the database.
    public var localChunks: String?
    public var logger: Logger

    public init(workers: Int? = nil, saveEvery: Int? = nil, chunkSize: Int? = nil, leaseSeconds: Double = 30,
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
/// registers its chunks in the store (the chunk bytes live in the database, so every
/// machine that reaches it can import them); `join` imports chunks until none is left.
public enum PostgresImport {
    /// What `start` did.
    public struct Started: Sendable {
        public var run: Int
        /// False when the store's unfinished run of this feed and pipeline was found instead.
        public var registered: Bool
        public var chunks: Int
        public var records: Int
        public var bytes: Int
        public var splitSeconds: Double
        public var uploadSeconds: Double
        /// The chunk files this process split, kept for its own workers to read instead of
        /// the database's copies (pass it as `PostgresImportOptions.localChunks`); the caller
        /// removes the directory when its import ends. Nil when nothing was split here.
        public var chunksDirectory: String?
    }

    /// Splits `feed` by `pipeline` (the pipeline file's bytes) and registers its chunks as a
    /// new run of the store at `url`, in one transaction, or finds the unfinished run of the
    /// same feed and pipeline.
    /// - Throws: `PipelineError` for a bad pipeline; `ImportError` (`.feedUnreadable`,
    ///   `.unfinishedRun` for another feed's unfinished run); `FeedError` for a malformed
    ///   feed; `PostgresError` when the store cannot be reached or written.
    public static func start(feed: String, pipeline: [UInt8], url: PostgresURL, options: PostgresImportOptions) throws -> Started {
        let spec = try PipelineSpec.parse(pipeline)
        if feed != "-" {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: feed, isDirectory: &isDirectory)
            guard exists, !isDirectory.boolValue, FileManager.default.isReadableFile(atPath: feed) else {
                throw ImportError(.feedUnreadable(path: feed, exists: exists))
            }
        }
        let store = try PostgresStore(url: url, model: spec.model)
        let connection = try store.connect()
        let feedSize = FileOps.isReadOnce(feed) ? 0 : FileOps.fileSize(feed) ?? 0
        if let (run, record) = try latestUnfinished(connection) {
            var reasons: [String] = []
            if record.feed != feed { reasons.append("its feed is \(record.feed)") }
            if record.feedByteSize != feedSize { reasons.append("the feed's size differs") }
            if record.pipelineSHA256 != spec.hash { reasons.append("the pipeline differs") }
            if reasons.isEmpty || feed == "-" && record.feed == "-" && record.pipelineSHA256 == spec.hash {
                options.logger.info("continuing the store's unfinished run", metadata: ["run": "\(run)"])
                return Started(run: run, registered: false, chunks: record.chunkCount, records: record.records, bytes: 0,
                               splitSeconds: 0, uploadSeconds: 0)
            }
            // A run that live processes write cannot be left: their saves would go on (and lose the new run's updates).
            let live = try connection.execute("""
                SELECT host || ' pid ' || pid FROM _ingest_processes
                WHERE run = $1 AND state = 'running' AND heartbeat > now() - make_interval(secs => $2) ORDER BY started
                """, [String(run), String(record.leaseSeconds)])
            if live.count > 0 {
                let names = (0..<live.count).map { live[$0, 0]! }.joined(separator: ", ")
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
                    try connection.execute("UPDATE _ingest_runs SET state = 'abandoned', ended = now() WHERE run = $1", [String(run)])
                }
            } catch PostgresError.server(_, let state) where state == "55P03" {
                throw ImportError(.storeBusy(store: url.description, holder:
                    "run \(run): a process that no longer beats is stopped in the middle of a save and holds it; end that process, then import again"))
            }
        }

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-split-\(UUID().uuidString)").path
        var keepDirectory = false
        defer { if !keepDirectory { try? FileManager.default.removeItem(atPath: directory) } }
        let chunkSize = options.chunkSize ?? spec.chunkSize
        let splitStarted = Date()
        options.logger.info("splitting the feed", metadata: ["feed": "\(feed)", "chunk size": "\(chunkSize)"])
        let splitter = Splitter(feedPath: feed, directory: directory,
                                options: SplitOptions(feed: FeedOptions(shape: spec.feed), chunkSize: chunkSize, form: spec.recordForm))
        let manifest = try splitter.run().manifest
        let splitSeconds = Date().timeIntervalSince(splitStarted)
        // The same feed and pipeline as the finished last run: nothing to do (see `Importer`).
        if !options.again, !spec.keylessEntities.isEmpty, let sum = manifest.feed.checksum {
            let last = try connection.execute("SELECT run, state, record FROM _ingest_runs ORDER BY run DESC LIMIT 1")
            if last.count == 1, last[0, 1] == "finished",
               let record = try? JSONDecoder().decode(PostgresRunRecord.self, from: Data(last[0, 2]!.utf8)),
               record.feedChecksum == sum, record.pipelineSHA256 == spec.hash {
                throw ImportError(.alreadyImported(store: url.description, run: Int(last[0, 0]!)!, keyless: spec.keylessEntities))
            }
        }

        let uploadStarted = Date()
        var bytes = 0
        let run: Int? = try connection.transaction {
            // One run is registered at a time; the row numbers it starts from are taken inside.
            try connection.execute("SELECT pg_advisory_xact_lock(727002)")
            // Another `import` may have registered a run while this one split the feed.
            if let (other, _) = try latestUnfinished(connection) {
                options.logger.info("another process registered a run meanwhile; joining it", metadata: ["run": "\(other)"])
                return nil
            }
            let run = Int(try connection.execute("SELECT coalesce(max(run), 0) + 1 FROM _ingest_runs")[0, 0]!)!
            var firstRows: [String: Int64] = [:]
            for entity in spec.model.entities {
                let next = try connection.execute("SELECT coalesce(max(\"_pk\"), 0) + 1 FROM \"\(entity.name.replacingOccurrences(of: "\"", with: "\"\""))\"")
                firstRows[entity.name] = Int64(next[0, 0]!)!
            }
            let record = PostgresRunRecord(feed: feed, feedByteSize: feedSize, pipeline: String(decoding: pipeline, as: UTF8.self),
                                           pipelineSHA256: spec.hash, chunkCount: manifest.chunks.count, chunkSize: chunkSize,
                                           records: manifest.chunks.reduce(0) { $0 + $1.records },
                                           saveEvery: options.saveEvery ?? spec.saveEvery, leaseSeconds: options.leaseSeconds,
                                           feedChecksum: manifest.feed.checksum, firstRowOfRun: firstRows)
            let encoded = String(decoding: try JSONEncoder().encode(record), as: UTF8.self)
            try connection.execute("INSERT INTO _ingest_runs (run, state, record) VALUES ($1, $2, $3)",
                                   [String(run), manifest.chunks.isEmpty ? "finished" : "running", encoded])
            for chunk in manifest.chunks {
                let data = try FileOps.readFile(directory + "/" + chunk.file)
                bytes += data.count
                try connection.execute("""
                    INSERT INTO _ingest_chunks (run, number, first_record, records, checksum, bytes) VALUES ($1, $2, $3, $4, $5, $6)
                    """, [String(run), String(chunk.index), String(chunk.firstRecord), String(chunk.records), chunk.checksum], bytes: data)
            }
            return run
        }
        guard let run else {
            // Joined as a run of its own feed or refused as another's, by the checks above.
            return try start(feed: feed, pipeline: pipeline, url: url, options: options)
        }
        let uploadSeconds = Date().timeIntervalSince(uploadStarted)
        options.logger.info("run registered", metadata: ["run": "\(run)", "chunks": "\(manifest.chunks.count)",
                                                         "upload ms": "\(Int(uploadSeconds * 1000))"])
        keepDirectory = true
        return Started(run: run, registered: true, chunks: manifest.chunks.count,
                       records: manifest.chunks.reduce(0) { $0 + $1.records }, bytes: bytes,
                       splitSeconds: splitSeconds, uploadSeconds: uploadSeconds, chunksDirectory: directory)
    }

    /// The newest run still running, with its record.
    static func latestUnfinished(_ connection: PostgresConnection) throws -> (Int, PostgresRunRecord)? {
        let rows = try connection.execute("SELECT run, record FROM _ingest_runs WHERE state = 'running' ORDER BY run DESC LIMIT 1")
        guard rows.count == 1 else { return nil }
        return (Int(rows[0, 0]!)!, try JSONDecoder().decode(PostgresRunRecord.self, from: Data(rows[0, 1]!.utf8)))
    }
}
