import Logging

/// The store side of an import run, for one process's part in it. `ImportRun` drives
/// every run the same way on both backends; a run store says where the run is recorded
/// and where its chunks come from:
/// - `SQLiteRunStore` records the run in the store file's metadata, behind a lock file
///   (one process); its split fills a local queue that the workers take chunks from in
///   feed order.
/// - `PostgresRunStore` records it in the `_ingest_*` tables, which any number of
///   processes on any machines share; its split registers each chunk there (its bytes
///   stored for the processes that join), and workers claim chunks with `SKIP LOCKED` leases.
///
/// Either way a save writes its chunk's marker and rejects in the transaction of its
/// rows (`BatchChunkWriter`, `ChunkBookkeeping`).
protocol RunStore {
    associatedtype Session: RunSession
    /// Registers a new run, or finds the unfinished run this import continues, and starts
    /// its split (on a thread of its own) when this process makes the chunks.
    /// - Throws: `ImportError` when the run cannot begin (an unreadable feed, another
    ///   feed's unfinished run, a busy store, a feed imported already); the store's errors.
    func begin(started: Double) throws -> Session
}

/// A run under way in this process, from `RunStore.begin` to `end`, on the thread that
/// runs the import (it may hold what must stay on that thread: a lock, a main context).
protocol RunSession {
    associatedtype Workers: RunWorkers
    associatedtype Report
    /// What the workers and the split share.
    var state: RunState { get }
    /// The workers' side of the run, shared by their threads.
    var workers: Workers { get }
    var workerCount: Int { get }
    var saveEvery: Int { get }
    var logger: Logger { get }
    /// Starts what runs beside the workers (the split, when this process makes the
    /// chunks), just before they start.
    func start()
    /// After the workers: waits for the split, records how the run stands (finished when
    /// no chunk is left), and says what this process did.
    /// - Throws: the run's failure (`state.failure`) after recording it; the store's errors.
    func end(totals: ChunkWorker.Totals) throws -> Report
}

/// The workers' side of a run under way: what each worker thread asks of the run store.
protocol RunWorkers: Sendable {
    /// Worker `number`'s chunk source and write path (0-based `number`, and the logger that
    /// names it), made on the worker's thread.
    func makeWorker(_ number: Int, _ logger: Logger) throws -> (source: any ChunkSource, path: ChunkWorker.Path)
    /// After every save, with the worker's number and what the save committed: throws to
    /// stop the run (a signal, `--max-rejects`, a test's crash).
    func saved(worker: Int, _ result: ImportWorker.ChunkResult) throws
    /// Whether the workers stop claiming chunks, besides the run's failure.
    func stopsClaiming() -> Bool
    /// A worker failed: the split stops, and whatever waits for chunks stops waiting.
    func workersFailed()
}

/// One process's part of an import run, the same on both stores: the run store begins
/// (registering the run or continuing it, the split started beside the workers when this
/// process makes the chunks), the workers import chunks until none is left for them or
/// the run fails, and the session ends the run.
enum ImportRun {
    /// Runs `store`'s import in this process.
    /// - Throws: what `RunStore.begin` and `RunSession.end` throw.
    static func run<Store: RunStore>(_ store: Store, started: Double = StageTimes.now()) throws -> Store.Session.Report {
        let session = try store.begin(started: started)
        session.start()
        let workers = session.workers
        let stage = WorkerStage(saveEvery: session.saveEvery, makeWorker: workers.makeWorker,
                                afterSave: { try workers.saved(worker: $0, $1) }, stop: workers.stopsClaiming,
                                logger: session.logger)
        let totals = stage.run(count: session.workerCount, state: session.state, onFailure: workers.workersFailed)
        return try session.end(totals: totals)
    }
}
