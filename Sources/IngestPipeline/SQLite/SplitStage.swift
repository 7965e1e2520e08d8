import Foundation
import IngestJSON
import IngestStore
import Synchronization

/// The run's first stage, on a thread of its own: the splitter writes chunk files and
/// offers each chunk that still has records to import to the chunk queue as soon as it
/// is in place, then closes the queue. A failure is recorded in the run's state.
final class SplitStage: Sendable {
    private let cancellation = Mutex<SplitCancellation?>(nil)
    private let thread = ManagedThread(name: "ingest.split")
    private let inputs: Inputs
    private let queue: ChunkQueue
    private let state: RunState
    private let started: Double
    private let manifest = Mutex<SplitManifest?>(nil)
    private let microseconds = Atomic<Int>(0)
    /// Chunks this run wrote: their checksums are of the bytes just written, so checking
    /// them again before import would hash each byte twice.
    private let written = Mutex<Set<Int>>([])

    /// What the stage needs from the run around it.
    struct Inputs: Sendable {
        var feed: String
        var directory: String
        var options: SplitOptions
        /// Records already done per chunk (an earlier run's marker).
        var done: [Int: Int]
        /// The checksums of the chunks an earlier run's saves imported records of: the
        /// split must make the same chunks again, or the feed changed under the run.
        var sums: [Int: String] = [:]
        /// Checks a finished split's feed against what the store recorded, before any of
        /// its chunks is offered.
        var check: @Sendable (SplitManifest) throws -> Void
        /// Records the finished split's feed in the store; may be called twice with one
        /// manifest (an already complete one), and must then write nothing new.
        var record: @Sendable (SplitManifest) throws -> Void
        /// The error to stop with when the chunks belong to another feed.
        var mismatch: @Sendable (String) -> any Error
    }

    init(_ inputs: Inputs, queue: ChunkQueue, state: RunState, started: Double) {
        (self.inputs, self.queue, self.state, self.started) = (inputs, queue, state, started)
    }

    /// Starts splitting on the stage's thread.
    func start() {
        thread.start { [self] _ in
            let splitter = Splitter(feedPath: inputs.feed, directory: inputs.directory, options: inputs.options)
            cancellation.withLock { $0 = splitter.cancellation }
            if state.failed { splitter.cancellation.cancel() }
            // Chunks to import that come before a chunk already saved wait until the split has
            // made that one again, so a feed changed in place stops the run before any of them.
            let stopper = splitter.cancellation
            let lastSaved = inputs.sums.keys.max() ?? 0
            let held = Mutex<[ChunkInfo]>([])
            let mismatched = Atomic<Bool>(false)
            @Sendable func offer(_ chunk: ChunkInfo, written isNew: Bool) {
                state.chunkSplit()
                state.metrics.split(chunk)
                if isNew { written.withLock { _ = $0.insert(chunk.index) } }
                if let sum = inputs.sums[chunk.index], sum != chunk.checksum {
                    held.withLock { $0.removeAll() }
                    mismatched.store(true, ordering: .relaxed)
                    state.fail(inputs.mismatch("the feed differs from the one the run's saves imported (chunk \(chunk.index) comes out different)"))
                    stopper.cancel()
                    return
                }
                guard !state.failed else { return }
                if (inputs.done[chunk.index] ?? 0) < chunk.records {
                    if chunk.index < lastSaved { held.withLock { $0.append(chunk) } } else { queue.push(chunk) }
                } else {
                    state.chunkFinished(chunk.index)
                }
                if chunk.index >= lastSaved { held.withLock { chunks in defer { chunks.removeAll() }; return chunks }.forEach(queue.push) }
            }
            splitter.onChunk = { offer($0, written: $1) }
            do {
                let report = try splitter.run()
                try inputs.check(report.manifest)
                if report.alreadyComplete {
                    // A manifest that agrees with the run's saves is recorded before any chunk is
                    // offered: once this run saved, its chunk count is in the store, and a manifest
                    // edited afterwards is refused on resume. Offered first, a worker's save could
                    // come before the record (found by CI under load).
                    let agrees = report.manifest.chunks.count >= lastSaved && report.manifest.chunks.allSatisfy { chunk in
                        inputs.sums[chunk.index].map { $0 == chunk.checksum } ?? true
                    }
                    if agrees { try inputs.record(report.manifest) }
                    report.manifest.chunks.forEach { offer($0, written: false) }
                }
                if let failure = state.failure { throw failure }
                if report.manifest.chunks.count < lastSaved {
                    throw inputs.mismatch("the feed differs from the one the run's saves imported (it has \(report.manifest.chunks.count) chunks, and chunk \(lastSaved) was saved)")
                }
                state.setTotal(report.manifest.chunks.count)
                // Again for an already complete manifest: nothing is written when nothing changed.
                try inputs.record(report.manifest)
                manifest.withLock { $0 = report.manifest }
            } catch SplitError.differentFeed(_, let reason) {
                // The splitter's advice (--force, --out) is for `ingest split`; `mismatch` gives an import's
                // ways on (resume it, or --abandon-run: see the CLI's Advice).
                state.fail(inputs.mismatch("the feed differs from the one the chunks were split from (\(reason))"))
            } catch SplitError.feedChanged(_, let chunk) {
                state.fail(inputs.mismatch("the feed differs from the one the chunks were split from (\(chunk) comes out different)"))
            } catch let error as FeedError {
                // Every chunk before the malformed part is imported whatever the timing: a run of a
                // truncated feed commits the same records each time, and a resume none more.
                state.failAfterOfferedChunks(error)
            } catch {
                state.fail(error)
            }
            // Chunks made from a feed the run's saves did not come from are of no use to it: gone,
            // the run resumes from the feed it had once that feed is back.
            if mismatched.load(ordering: .relaxed) { Importer.deleteChunks(inputs.directory) }
            microseconds.store(Int((StageTimes.now() - started) * 1e6), ordering: .relaxed)
            queue.close()
        }
    }

    /// Stops the split after the chunk being written.
    func cancel() { cancellation.withLock { $0?.cancel() } }

    /// True for a chunk this run's split wrote.
    func wrote(_ chunk: Int) -> Bool { written.withLock { $0.contains(chunk) } }

    /// Waits for the split to end; its manifest (nil when it failed) and its wall time.
    func wait() -> (manifest: SplitManifest?, seconds: Double) {
        thread.join()
        return (manifest.withLock { $0 }, Double(microseconds.load(ordering: .relaxed)) / 1e6)
    }
}
