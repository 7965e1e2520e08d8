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
        var failure: (any Error)?
    }

    private let counts: Mutex<Counts>

    init(rejected: Int) {
        counts = Mutex(Counts(rejectedBefore: rejected))
    }

    func chunkSplit() { counts.withLock { $0.chunksSplit += 1 } }
    func chunkFinished() { counts.withLock { $0.chunksDone += 1 } }
    func setTotal(_ total: Int) { counts.withLock { $0.chunksTotal = total } }

    /// Counts a save; returns the rejects in all so far.
    func saved(_ result: ImportWorker.ChunkResult) -> Int {
        counts.withLock {
            $0.imported += result.imported
            $0.rejectedThisRun += result.rejected
            return $0.rejectedBefore + $0.rejectedThisRun
        }
    }

    func fail(_ error: any Error) { counts.withLock { if $0.failure == nil { $0.failure = error } } }
    var failed: Bool { counts.withLock { $0.failure != nil } }
    var failure: (any Error)? { counts.withLock { $0.failure } }
    var imported: (imported: Int, rejected: Int) { counts.withLock { ($0.imported, $0.rejectedThisRun) } }

    func progress(counts entityCounts: [String: Int], elapsed: Double, isFinal: Bool) -> ImportProgress {
        counts.withLock {
            ImportProgress(chunksTotal: $0.chunksTotal, chunksSplit: $0.chunksSplit, chunksDone: $0.chunksDone,
                           recordsThisRun: $0.imported + $0.rejectedThisRun, rejected: $0.rejectedBefore + $0.rejectedThisRun,
                           counts: entityCounts, elapsed: elapsed, isFinal: isFinal)
        }
    }
}
