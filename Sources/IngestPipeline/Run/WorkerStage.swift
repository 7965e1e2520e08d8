import Foundation
import IngestStore
import Logging
import Synchronization

/// A run's workers, on either store: W threads, each a `ChunkWorker` with its own chunk
/// source and write path (made on its thread by `makeWorker`). After every save
/// `afterSave` decides whether the run goes on; the first error is the run's failure,
/// and stops every worker.
struct WorkerStage: Sendable {
    var saveEvery: Int
    /// Worker `n`'s chunk source and write path (0-based `n`, and the logger that names
    /// it), made on the worker's thread.
    var makeWorker: @Sendable (Int, Logger) throws -> (source: any ChunkSource, path: ChunkWorker.Path)
    /// Runs after every save with the worker's number and what the save committed;
    /// throws to stop the run (a signal, --max-rejects, a test's crash).
    var afterSave: @Sendable (Int, ImportWorker.ChunkResult) throws -> Void
    /// Whether the workers should stop claiming chunks, besides the run's failure.
    var stop: @Sendable () -> Bool = { false }
    var logger: Logger

    /// Runs `count` workers until they have no chunk left or the run fails (`state.failure`);
    /// `onFailure` runs once a worker fails. Returns the workers' totals, summed.
    func run(count: Int, state: RunState, onFailure: @escaping @Sendable () -> Void = {}) -> ChunkWorker.Totals {
        let totals = Mutex(ChunkWorker.Totals())
        // A thread per worker: concurrentPerform runs no more iterations at once than there
        // are cores, so on two cores workers 3 and 4 started only when the queue was empty.
        let threads = (0..<count).map { ManagedThread(name: "ingest.worker.\($0 + 1)") }
        for (number, thread) in threads.enumerated() {
            thread.start { _ in
                var logger = logger
                logger[metadataKey: "worker"] = "\(number + 1)"
                do {
                    let (source, path) = try makeWorker(number, logger)
                    let worker = ChunkWorker(source: source, path: path, saveEvery: saveEvery, metrics: state.metrics,
                                             afterSave: { try afterSave(number, $0) },
                                             shouldStop: { [stop] in state.failed || stop() }, logger: logger)
                    defer { totals.withLock { $0 = $0 + worker.totals } }
                    try worker.run()
                } catch {
                    state.fail(error)
                    onFailure()
                }
            }
        }
        threads.forEach { $0.join() }
        return totals.withLock { $0 }
    }
}
