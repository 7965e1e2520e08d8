import Foundation
import IngestJSON
import Logging
import IngestStore
import Synchronization

/// The run's second stage: W workers, each a thread of its own, take chunks from the
/// queue and import them on the batch path (`BatchImportWorker`) when the pipeline
/// allows it, else on the object path (`ImportWorker`). After every save `afterSave`
/// decides whether the run goes on; the first error stops every worker and the split.
struct WorkerStage: Sendable {
    var coordinator: PersistentStoreCoordinator
    var spec: PipelineSpec
    var directory: String
    /// Records already done per chunk (an earlier run's marker).
    var done: [Int: Int]
    var saveEvery: Int
    /// Whether a chunk's bytes were checked already (this run wrote or verified them).
    var trusted: @Sendable (Int) -> Bool
    /// Runs after every save with the worker's number and the records it committed;
    /// throws to stop the run (a signal, --max-rejects, a test's crash).
    var afterSave: @Sendable (Int, ImportWorker.ChunkResult) throws -> Void
    /// Write through contexts and managed objects even where the batch path applies.
    var objectPath: Bool
    /// Each entity's first row number made by this run (`nextRowNumbers()` as it began).
    var firstRowOfRun: [String: Int64]
    /// The run's marker and reject keys.
    var keys: ImportMarker.Keys
    var logger: Logger

    private func makeRows() -> (rows: RowMapper, inserter: BatchInserter)? {
        let inserter = BatchInserter(coordinator: coordinator, rules: spec.mappings.mapValues(\.onConflict))
        inserter.firstRowOfRun = firstRowOfRun
        return RowMapper(mapper: RecordMapper(spec: spec), inserter: inserter).map { ($0, inserter) }
    }

    /// Whether the workers will take the batch path.
    var batchPath: Bool {
        !objectPath && makeRows() != nil
    }

    /// Runs `count` workers, on the batch path when `batch` (see `batchPath`), until the
    /// queue is closed and empty or the run fails; returns their stage times, summed.
    func run(count: Int, batch: Bool, queue: ChunkQueue, state: RunState, split: SplitStage) -> StageTimes {
        let times = Mutex(StageTimes())
        // A thread per worker: concurrentPerform runs no more iterations at once than there
        // are cores, so on two cores workers 3 and 4 started only when the queue was empty.
        let finished = DispatchGroup()
        for number in 0..<count {
            finished.enter()
            Thread.detachNewThread {
                defer { finished.leave() }
                do {
                    let worked = try work(number, batch: batch, queue: queue, state: state)
                    times.withLock { $0 = $0 + worked }
                } catch {
                    state.fail(error)
                    split.cancel()
                    queue.close()
                }
            }
        }
        finished.wait()
        return times.withLock { $0 }
    }

    private func work(_ number: Int, batch: Bool, queue: ChunkQueue, state: RunState) throws -> StageTimes {
        var logger = logger
        logger[metadataKey: "worker"] = "\(number + 1)"
        func drain(_ worker: some ChunkImporting) throws -> StageTimes {
            while !state.failed, let chunk = queue.pop() {
                let started = StageTimes.now()
                logger.debug("chunk started", metadata: ["chunk": "\(chunk.index)", "records": "\(chunk.records)",
                                                         "done before": "\(done[chunk.index] ?? 0)"])
                try worker.importChunk(chunk, directory: directory, skip: done[chunk.index] ?? 0, saveEvery: saveEvery,
                                       verified: trusted(chunk.index),
                                       waitForTurn: {
                                           let waiting = StageTimes.now()
                                           if !state.order.waitForTurn(chunk.index) { throw CommitTurnCancelled() }
                                           logger.debug("turn to commit", metadata: ["chunk": "\(chunk.index)",
                                                                                     "waited ms": "\(Int((StageTimes.now() - waiting) * 1000))"])
                                       },
                                       afterSave: { saved in
                                           logger.debug("saved", metadata: ["chunk": "\(chunk.index)", "records": "\(saved.imported)",
                                                                            "rejected": "\(saved.rejected)", "ms": "\(Int(saved.seconds * 1000))",
                                                                            "locked ms": "\(Int(saved.lockedSeconds * 1000))"])
                                           try afterSave(number, saved)
                                       })
                state.chunkFinished(chunk.index)
                logger.debug("chunk finished", metadata: ["chunk": "\(chunk.index)", "ms": "\(Int((StageTimes.now() - started) * 1000))"])
            }
            return worker.times
        }
        if batch, let (rows, inserter) = makeRows() {
            let worker = BatchImportWorker(rows: rows, inserter: inserter, keys: keys)
            worker.logger = logger
            return try drain(worker)
        }
        let context = ObjectContext(coordinator: coordinator, name: "worker-\(number + 1)")
        return try context.perform {
            let worker = ImportWorker(context: context, spec: spec, keys: keys, firstRowOfRun: firstRowOfRun)
            worker.logger = logger
            return try drain(worker)
        }
    }
}
