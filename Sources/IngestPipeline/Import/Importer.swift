public import Foundation
public import Logging
public import CoreMetrics
public import IngestStore
import Synchronization

/// Imports a feed into a store with a pipeline: a SQLite file, or a PostgreSQL database
/// named by its URL (`postgresql://…`). The splitter writes chunk files on one thread while
/// W workers, each with its own private context, import finished chunks in order, saving
/// every K records with the resume marker in the same transaction. Running it again with
/// the same feed, pipeline and store continues where the last run stopped.
///
/// On SQLite one process imports a run, and a main context merges every save and reports
/// progress. On PostgreSQL the run is registered in the database and its chunks are stored
/// there as the split makes them, so any number of processes, on any machines, import the
/// same run: `Importer(joining:options:)` is one of them.
public final class Importer: Sendable {
    public struct Options: Sendable {
        public var feed: String
        /// The store: a SQLite file's path, or a PostgreSQL URL (`postgresql://…`, `postgres://…`).
        public var store: String
        /// Where the chunk files go; default: next to the store, `STORE.chunks`. SQLite only.
        public var chunks: String?
        public var workers: Int?
        public var saveEvery: Int?
        public var chunkSize: Int?
        /// Leave the store's unfinished run as it is (its records stay) and import this
        /// feed as a new run.
        public var abandonRun: Bool
        /// Delete the store, and everything imported into it, before importing. SQLite only.
        public var deleteStore: Bool
        /// Import the feed even when the store's last run imported the same feed with the
        /// same pipeline (by default that is refused with `ImportError.alreadyImported`).
        public var again = false
        /// Keep the chunk files of a run that finishes (by default they are deleted). SQLite
        /// only: a PostgreSQL store keeps its chunks in the database.
        public var keepChunks: Bool
        /// Stop (resumably) once more than this many records have been rejected in all.
        /// SQLite only: a PostgreSQL run imports what it can and keeps the rest in `_ingest_rejects`.
        public var maxRejects: Int?
        /// Keep the secondary indexes during the import instead of building them at the end.
        /// SQLite only: a PostgreSQL store keeps its indexes during imports.
        public var keepIndexes: Bool
        /// The pipeline file's path, recorded for `ingest resume`. On PostgreSQL, when the
        /// importer was made from a spec, the run stores this file's text (joined processes
        /// read the run's pipeline from the database).
        public var pipelinePath: String?
        /// Write through managed objects and contexts even where the batch path applies
        /// (it is chosen whenever the pipeline allows: see `RowMapper`). SQLite only: ignored on
        /// PostgreSQL, whose workers choose by the pipeline alone.
        public var objectPath = false
        /// The pipeline was inferred from the feed (`PipelineInference`), as the run records.
        public var pipelineInferred = false
        /// Continue the run from its finished split's chunk files without reading the feed
        /// (one read once, from standard input or a pipe). A chunk file that is missing or
        /// changed stops the run with `SplitError.chunksMissing`. SQLite only (ignored on
        /// PostgreSQL, whose chunks are in the database).
        public var withoutFeed = false
        /// PostgreSQL only: seconds a claimed chunk survives without its process's heartbeat
        /// (renewed every third of it); default 30. Refused on SQLite.
        public var leaseSeconds: Double?
        /// PostgreSQL only, when joining: claim the chunks the importing process keeps from
        /// its chunk files where they can be read here (the default), rather than wait for
        /// it to store them in the database. Ignored on SQLite.
        public var readsKeptChunkFiles = true
        /// A replay's links, one for each record of `feed` in its order (set by
        /// `init(replaying:options:)`): recorded with the new run, whose end removes the
        /// rejects they replay.
        package var replay: [Replay.Link]?
        /// A dry run's import into a copy: the runs the copy records name the original's
        /// chunk directories, whose leftover files are not the copy's to remove.
        package var removesLeftoverChunks = true
        /// Where the run logs: its stages at `info`; each chunk, save, wait and lookup at
        /// `debug`; each rejected record at `trace`. Default: nowhere.
        public var logger = Logger(label: "ingest.import", factory: { _ in SwiftLogNoOpLogHandler() })
        /// Where the run's metrics go as it goes (records, objects, chunks, bytes, save
        /// latency, seconds per stage, retries: `ImportMetrics` lists them). Default: the
        /// factory bootstrapped in swift-metrics' `MetricsSystem`, which records nothing
        /// unless the application bootstrapped one.
        public var metrics: (any MetricsFactory)?

        public init(feed: String, store: String, chunks: String? = nil, workers: Int? = nil, saveEvery: Int? = nil,
                    chunkSize: Int? = nil, abandonRun: Bool = false, deleteStore: Bool = false, keepChunks: Bool = false,
                    maxRejects: Int? = nil, keepIndexes: Bool = false, pipelinePath: String? = nil, pipelineInferred: Bool = false,
                    logger: Logger? = nil) {
            self.feed = feed
            self.store = store
            self.chunks = chunks
            self.workers = workers
            self.saveEvery = saveEvery
            self.chunkSize = chunkSize
            self.abandonRun = abandonRun
            self.deleteStore = deleteStore
            self.keepChunks = keepChunks
            self.maxRejects = maxRejects
            self.keepIndexes = keepIndexes
            self.pipelinePath = pipelinePath
            self.pipelineInferred = pipelineInferred
            if let logger { self.logger = logger }
        }

        /// Options for joining or resuming the store's run, whose feed and pipeline the store records.
        public init(store: String, workers: Int? = nil, logger: Logger? = nil) {
            self.init(feed: "", store: store, workers: workers, logger: logger)
        }

        /// Whether `store` names a PostgreSQL database rather than a SQLite file.
        public var isPostgres: Bool { PostgresURL.isPostgres(store) }
    }

    /// What `run()` does: import a feed, or take part in the store's run.
    enum Work: Sendable {
        /// Import `options.feed`; `text` is the pipeline file's bytes when they were given.
        case feed(text: [UInt8]?)
        /// Join the PostgreSQL store's run `run` (nil: its newest unfinished one).
        case join(run: Int?)
    }

    /// The pipeline the feed is imported with; nil for an importer that joins a PostgreSQL
    /// run (the run's pipeline is the one the store recorded).
    public let spec: PipelineSpec?
    public let options: Options
    let work: Work
    /// The coordinator the import saves through, when it was given one (a container's);
    /// nil: the importer opens the store `options.store` names itself.
    public let coordinator: PersistentStoreCoordinator?

    /// Set by `cancel()`: the run stops at its next save boundary.
    let cancellation = Atomic<Bool>(false)
    /// Whether `cancel()` was called.
    public var isCancelled: Bool { cancellation.load(ordering: .relaxed) }

    /// What `cancel()` stops in a SQLite run under way.
    struct ActiveRun: Sendable {
        let state: RunState
        let split: SplitStage
        let queue: ChunkQueue
    }
    let active = Mutex<ActiveRun?>(nil)
    /// This process's part in a PostgreSQL run under way, for `cancel()`.
    let activeJoin = Mutex<PostgresJoin?>(nil)

    /// Tests stop the run after this many saves (in all workers together), as a crash would.
    let stopAfterSaves = Atomic<Int>(Int.max)
    let saves = Atomic<Int>(0)
    let listeners = ObserverRegistry<ImportProgress>()
    /// Keeps the progress events of concurrent PostgreSQL workers in order.
    let publishing = Mutex<Void>(())

    /// An importer of `options.feed` into `options.store` with `spec`.
    public init(spec: PipelineSpec, options: Options) {
        self.spec = spec
        self.options = options
        self.work = .feed(text: nil)
        coordinator = nil
    }

    /// An importer of `options.feed` into `options.store` with the pipeline file's bytes
    /// (a PostgreSQL run stores them for the processes that join it).
    /// - Throws: `PipelineError` for a pipeline that does not parse.
    public init(pipeline: [UInt8], options: Options) throws {
        self.spec = try PipelineSpec.parse(pipeline)
        self.options = options
        self.work = .feed(text: pipeline)
        coordinator = nil
    }

    /// One more process importing the PostgreSQL store's run `run` (nil: its newest
    /// unfinished run), beside the process that started it and any others; `run()` imports
    /// chunks until none is left. `options.feed` is not read (the run's feed is split by the
    /// process that registered it).
    public init(joining run: Int? = nil, options: Options) {
        self.spec = nil
        self.options = options
        self.work = .join(run: run)
        coordinator = nil
    }

    /// An importer of `options.feed` with `spec` into the store `coordinator` has open (a
    /// `PersistentContainer`'s): every save of the import goes through it, so its contexts
    /// hear of each one as it commits (a container's view context merges it) instead of
    /// following the store's history, and a store held in memory, which no path reopens,
    /// can be imported into. `options.store` is not read: the importer's `options.store`
    /// is the coordinator's `path`.
    ///
    /// On SQLite and in memory the import is what `init(spec:options:)` makes of the store's
    /// file (a lock, a run recorded in the store, resumable while the coordinator lives),
    /// with the run's files (lock, chunks, report, rejects) beside the file or, for a store
    /// in memory, in the temporary directory under its store ID. The coordinator's
    /// `recordsHistory` follows the pipeline during the run, and its secondary indexes are
    /// rebuilt at the end unless `options.keepIndexes` (set it when views fetch by them
    /// meanwhile). On PostgreSQL the coordinator hears of this process's saves; chunks
    /// other processes import reach it through the store's history only.
    ///
    /// `run()` throws `ImportError` when the coordinator's model is not the pipeline's, or
    /// it is read-only, or `options.deleteStore` asks to delete a store it has open.
    public init(spec: PipelineSpec, options: Options, coordinator: PersistentStoreCoordinator) {
        self.spec = spec
        var options = options
        options.store = coordinator.path
        self.options = options
        self.work = .feed(text: nil)
        self.coordinator = coordinator
    }

    /// An importer of `options.feed` with the pipeline file's bytes into the store
    /// `coordinator` has open (see `init(spec:options:coordinator:)`; a PostgreSQL run
    /// stores the bytes for the processes that join it).
    /// - Throws: `PipelineError` for a pipeline that does not parse.
    public init(pipeline: [UInt8], options: Options, coordinator: PersistentStoreCoordinator) throws {
        self.spec = try PipelineSpec.parse(pipeline)
        var options = options
        options.store = coordinator.path
        self.options = options
        self.work = .feed(text: pipeline)
        self.coordinator = coordinator
    }

    /// Stops the run at its next save boundary (from a signal handler's queue, say), and at
    /// once where nothing saves: a split waiting for input from a pipe (its read ends) and
    /// workers waiting for a chunk (the queue closes). On SQLite `run()` then throws
    /// `ImportInterrupted`; on PostgreSQL it returns a report that says `stopped`. Either
    /// way the run is resumable.
    public func cancel() {
        cancellation.store(true, ordering: .relaxed)
        activeJoin.withLock { $0 }?.cancel()
        guard let run = active.withLock({ $0 }) else { return }
        run.state.fail(ImportInterrupted())
        run.split.cancel()
        run.queue.close()
    }

    /// The rejects file of a SQLite store (a PostgreSQL store keeps them in `_ingest_rejects`).
    public var rejectsPath: String { filesBase + ".rejects.ndjson" }
    /// Where a SQLite run writes its report as JSON.
    public var reportPath: String { filesBase + ".report.json" }

    /// Whether the store is a PostgreSQL database: the given coordinator's, or the one
    /// `options.store` names.
    var isPostgres: Bool { coordinator.map { $0.postgresURL != nil } ?? options.isPostgres }

    /// What a SQLite run's files are named after (`.lock`, `.chunks/`, `.report.json`,
    /// `.rejects.ndjson`): the store's file, or for a store in memory a name in the
    /// temporary directory made of its store ID (its `path` is no file's), whose files go
    /// when its coordinator does (`SQLiteRunStore.begin`).
    var filesBase: String {
        guard let coordinator, coordinator.isInMemory else { return options.store }
        return FileManager.default.temporaryDirectory.appendingPathComponent("ingest-memory-\(coordinator.storeID.uuidString.lowercased())").path
    }

    /// Calls `handler` with every progress event of `run()`, in order (on SQLite on the main
    /// context's queue; on PostgreSQL on the worker that saved, with `counts` empty). Keep the
    /// token to stop with `removeProgressObserver`.
    @discardableResult
    public func addProgressObserver(_ handler: @escaping @Sendable (ImportProgress) -> Void) -> UUID {
        listeners.add(handler)
    }

    public func removeProgressObserver(_ token: UUID) {
        listeners.remove(token)
    }

    /// The progress events of `run()` as an async sequence; it finishes after the final
    /// event (or when the reading task is cancelled). Ask for it before calling `run()`.
    public func progressEvents() -> AsyncStream<ImportProgress> {
        listeners.stream(finishingAfter: \.isFinal)
    }

    func publish(_ event: ImportProgress) {
        listeners.post(event)
    }

    /// Runs the import: continues the store's unfinished run when it is of this feed and
    /// pipeline, else starts a new run (a store takes any number of feeds, one run each; a
    /// finished run never blocks the next). On PostgreSQL the run is registered, its feed
    /// split beside this process's workers, and the report is this process's part (other
    /// processes may have imported some of the run's chunks).
    /// - Throws: `ImportError` when the feed cannot be read, the store's unfinished run
    ///   is of another feed or pipeline (unless `abandonRun`), or more records were
    ///   rejected than `maxRejects`, or an option does not apply to the store's backend;
    ///   `ImportError.noImport` when joining a store with no unfinished run;
    ///   `ImportError` when a given coordinator is read-only or holds another model than
    ///   the pipeline's; `ImportInterrupted` on SQLite after `cancel()`; `FeedError`, `SplitError`,
    ///   `IOError`, `StoreError`, `PostgresError` from the stages.
    public func run() throws -> ImportReport {
        do {
            return try runGiven()
        } catch {
            removeReplayFilesUnlessRecorded()
            throw error
        }
    }

    /// `run()` with the coordinator the importer was given, if any.
    private func runGiven() throws -> ImportReport {
        if let coordinator {
            guard !coordinator.isReadOnly else { throw ImportError("\(options.store): the coordinator is read-only: an import writes") }
            if let spec, try coordinator.model != spec.model.validated() {
                throw ImportError("\(options.store): the coordinator's model is not the pipeline's: make the container (or coordinator) with the pipeline's model (spec.model)")
            }
            // The pipeline says whether the import's saves are in the history; the
            // coordinator's other saves go on as they were after the run.
            let recordedHistory = coordinator.recordsHistory
            coordinator.recordsHistory = spec?.history ?? recordedHistory
            defer { coordinator.recordsHistory = recordedHistory }
            return try runOnStore()
        }
        return try runOnStore()
    }

    /// `run()` on the store's backend.
    private func runOnStore() throws -> ImportReport {
        if isPostgres {
            let (report, splitFailure) = try runOnPostgres(started: { _ in })
            if let splitFailure { throw splitFailure }
            return report
        }
        guard let spec else {
            throw ImportError("\(options.store): joining a run works on PostgreSQL stores only (postgresql://…); a SQLite store's run is resumed by importing its feed again")
        }
        if options.leaseSeconds != nil {
            throw ImportError("leaseSeconds works on PostgreSQL stores only: a SQLite store has one importing process, which holds no leases")
        }
        return try ImportRun.run(SQLiteRunStore(importer: self, spec: spec))
    }
}

/// The run stopped at a save boundary because it was asked to (SIGINT, SIGTERM).
public struct ImportInterrupted: Error, Sendable {}
