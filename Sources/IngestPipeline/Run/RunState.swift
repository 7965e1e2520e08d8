import IngestStore
import Synchronization

/// What the workers and the splitter share during a run.
final class RunState: Sendable {
    private struct Counts {
        var chunksSplit = 0
        var chunksTotal: Int?
        var chunksDone = 0
        var imported = 0
        var rejectedThisRun = 0
        var rejectedBefore = 0
        var outcomes = RecordOutcomes()
        var failure: (any Error)?
        /// A failure found after the chunks before it were offered (a malformed feed): they
        /// are imported first, so how much a run commits never depends on timing.
        var failureAfterChunks: (any Error)?
        /// Records committed per worker per second of the run.
        var timeline: [[Int]] = []
    }

    private let counts: Mutex<Counts>

    private let started: Double
    /// Where the run's counts go as they happen, besides its report.
    let metrics: ImportMetrics

    init(rejected: Int, workers: Int, started: Double, metrics: ImportMetrics) {
        counts = Mutex(Counts(rejectedBefore: rejected, timeline: Array(repeating: [], count: workers)))
        self.started = started
        self.metrics = metrics
    }

    func chunkSplit() { counts.withLock { $0.chunksSplit += 1 } }
    /// Workers commit chunks in feed order through this.
    let order = CommitOrder()

    func chunkFinished(_ chunk: Int) {
        counts.withLock { $0.chunksDone += 1 }
        order.finish(chunk)
    }
    func setTotal(_ total: Int) { counts.withLock { $0.chunksTotal = total } }

    /// Counts a save of worker `worker`; returns the rejects in all so far.
    func saved(_ result: ImportWorker.ChunkResult, worker: Int) -> Int {
        let second = max(0, Int(StageTimes.now() - started))
        metrics.saved(result)
        return counts.withLock {
            $0.imported += result.imported
            $0.rejectedThisRun += result.rejected
            $0.outcomes = $0.outcomes + result.outcomes
            if $0.timeline[worker].count <= second {
                $0.timeline[worker] += repeatElement(0, count: second + 1 - $0.timeline[worker].count)
            }
            $0.timeline[worker][second] += result.imported + result.rejected
            return $0.rejectedBefore + $0.rejectedThisRun
        }
    }

    /// Records per second of the run, per worker, all of equal length.
    var timeline: [[Int]] {
        counts.withLock { counts in
            let length = counts.timeline.map(\.count).max() ?? 0
            return counts.timeline.map { $0 + repeatElement(0, count: length - $0.count) }
        }
    }

    func fail(_ error: any Error) {
        counts.withLock { if $0.failure == nil { $0.failure = error } }
        order.cancel()
    }
    /// Fails the run once the chunks offered so far are imported (see `Counts.failureAfterChunks`).
    func failAfterOfferedChunks(_ error: any Error) {
        counts.withLock { if $0.failureAfterChunks == nil { $0.failureAfterChunks = error } }
    }
    /// Whether the workers stop now.
    var failed: Bool { counts.withLock { $0.failure != nil } }
    /// Why the run failed, once its workers stopped.
    var failure: (any Error)? { counts.withLock { $0.failure ?? $0.failureAfterChunks } }
    var imported: (imported: Int, rejected: Int) { counts.withLock { ($0.imported, $0.rejectedThisRun) } }
    var outcomes: RecordOutcomes { counts.withLock { $0.outcomes } }

    /// Seconds since the run began.
    var elapsed: Double { StageTimes.now() - started }

    func progress(counts entityCounts: [String: Int], elapsed: Double, isFinal: Bool) -> ImportProgress {
        counts.withLock {
            ImportProgress(chunksTotal: $0.chunksTotal, chunksSplit: $0.chunksSplit, chunksDone: $0.chunksDone,
                           recordsThisRun: $0.imported + $0.rejectedThisRun, rejected: $0.rejectedBefore + $0.rejectedThisRun,
                           counts: entityCounts, elapsed: elapsed, isFinal: isFinal)
        }
    }
}
