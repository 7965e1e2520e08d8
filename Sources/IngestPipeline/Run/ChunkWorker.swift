import Foundation
import IngestJSON
import IngestStore
import Logging
import Synchronization

/// One worker of a run, on either store: it claims chunks from its `ChunkSource` and
/// imports them on the batch path (`BatchChunkWriter`: this thread maps each K records
/// into a request while a writing thread saves the one before) or on the object path
/// (`ImportWorker`: a private context). Every save holds the chunk's marker and rejects
/// with the rows; after each, `afterSave` decides whether the run goes on.
final class ChunkWorker {
    /// How the worker writes.
    enum Path {
        case batch(any BatchChunkWriter, RowMapper)
        case objects(ImportWorker)
    }

    /// What the worker did, beside the records `afterSave` counted.
    struct Totals: Sendable {
        var times = StageTimes()
        /// Chunks whose last save this worker committed.
        var chunks = 0
        /// Chunks another process took over (`ChunkTakenOver`).
        var leasesLost = 0
        /// Records the batch path captured by the split's member ends, without a scan.
        var stepped = 0
        /// Saves rolled back and tried again (`BatchResult.retries`).
        var retries = 0
        /// Chunks given back before their first save (`ChunkYielded`).
        var yielded = 0

        static func + (lhs: Totals, rhs: Totals) -> Totals {
            Totals(times: lhs.times + rhs.times, chunks: lhs.chunks + rhs.chunks, leasesLost: lhs.leasesLost + rhs.leasesLost,
                   stepped: lhs.stepped + rhs.stepped, retries: lhs.retries + rhs.retries, yielded: lhs.yielded + rhs.yielded)
        }
    }

    let source: any ChunkSource
    let path: Path
    let saveEvery: Int
    /// Runs after every save, on the thread that saved; throws to stop the run.
    let afterSave: @Sendable (ImportWorker.ChunkResult) throws -> Void
    /// Whether to stop claiming and mapping chunks (the run was stopped, or failed).
    let shouldStop: @Sendable () -> Bool
    let logger: Logger
    let metrics: ImportMetrics
    private(set) var totals = Totals()

    init(source: any ChunkSource, path: Path, saveEvery: Int, metrics: ImportMetrics,
         afterSave: @escaping @Sendable (ImportWorker.ChunkResult) throws -> Void,
         shouldStop: @escaping @Sendable () -> Bool, logger: Logger) {
        self.source = source
        self.path = path
        self.saveEvery = saveEvery
        self.metrics = metrics
        self.afterSave = afterSave
        self.shouldStop = shouldStop
        self.logger = logger
    }

    /// Imports chunks until the source has none left, `shouldStop` says so, or a save fails.
    /// - Throws: what the source, the writer or `afterSave` throws.
    func run() throws {
        switch path {
        case .batch(let writer, let rows): try importBatches(writer, rows)
        case .objects(let importer): try importObjects(importer)
        }
    }

    // MARK: - The object path

    /// A save of the object path found the run stopping, its chunk not done.
    private struct StoppedAtSave: Error {}

    private func importObjects(_ importer: ImportWorker) throws {
        let context = importer.context
        // Counted however the worker ends (a failed or stopped run's seconds were spent too).
        defer {
            totals.times = totals.times + importer.times
            metrics.add(importer.times, ImportMetrics.Stage.allCases)
        }
        try context.performAndWait {
            while let claimed = try source.claim(until: shouldStop) {
                let chunk = claimed.info
                totals.times.parse += claimed.readSeconds
                metrics.add(claimed.readSeconds, to: .parse)
                logger.debug("chunk started", metadata: ["chunk": "\(chunk.index)", "records": "\(chunk.records)", "done before": "\(claimed.done)"])
                importer.bookkeeping.begin(chunk, done: claimed.done)
                var done = claimed.done
                do {
                    try importer.importChunk(chunk, bytes: claimed.bytes, skip: claimed.done, saveEvery: saveEvery,
                                             waitForTurn: claimed.waitForTurn) { saved in
                        done += saved.imported + saved.rejected
                        logger.debug("saved", metadata: ["chunk": "\(chunk.index)", "done": "\(done)", "records": "\(saved.imported)",
                                                         "rejected": "\(saved.rejected)", "ms": "\(Int(saved.seconds * 1000))"])
                        try afterSave(saved)
                        if shouldStop() && done < chunk.records { throw StoppedAtSave() }
                    }
                } catch is StoppedAtSave {
                    importer.discard()
                    break
                } catch is ChunkYielded {
                    importer.discard()
                    totals.yielded += 1
                    logger.debug("chunk given back before its first save", metadata: ["chunk": "\(chunk.index)"])
                    continue
                } catch is ChunkTakenOver {
                    importer.discard()
                    totals.leasesLost += 1
                    metrics.leaseLost()
                    logger.warning("chunk lease lost to another process (this process stalled longer than the lease)",
                                   metadata: ["chunk": "\(chunk.index)"])
                    continue
                } catch {
                    importer.discard()
                    throw error
                }
                claimed.finished()
                totals.chunks += 1
                metrics.chunkDone()
                logger.debug("chunk finished", metadata: ["chunk": "\(chunk.index)"])
            }
        }
    }

    // MARK: - The batch path

    /// One batch, handed from the mapping thread to the writing one.
    struct Batch: Sendable {
        var claimed: ClaimedChunk
        var request: BatchInsertRequest
        var save: ChunkSave
        /// The first batch of its claim: the writer waits for the chunk's turn before it.
        var first: Bool
    }

    /// The batch path. Where the writer asks for it (PostgreSQL, whose server writes while
    /// the client maps), in two stages: this thread claims chunks and maps each K records
    /// into a request, and a writing thread prepares and saves them in the order they were
    /// mapped, the mapper at most one batch ahead. Elsewhere (SQLite, whose workers overlap
    /// each other's writes already) this thread saves each batch itself: fewer requests
    /// are held at once.
    private func importBatches<Writer: BatchChunkWriter>(_ writer: Writer, _ rows: RowMapper) throws {
        defer { totals.stepped += rows.steppedRecords }
        guard writer.overlapsMapping else {
            var saver = BatchSaver(writer: writer, afterSave: afterSave, metrics: metrics, logger: logger)
            defer { totals = totals + saver.totals }
            try map(rows: rows, requests: writer.requests) { batch in
                try saver.save(batch)
                return true
            }
            return
        }
        // A chunk the writer gives back (`ChunkYielded`) after the mapping stage found none
        // left to claim would be claimed by nobody in this process, and with no other process
        // left, never: the worker maps again while its writer gave chunks back in the round.
        // The new round's claim takes the chunk, or finds none left and ends.
        while true {
            let yielded = totals.yielded
            try mapAndWrite(writer, rows)
            if totals.yielded == yielded || shouldStop() { return }
            logger.debug("mapping again: the writer gave chunks back", metadata: ["chunks": "\(totals.yielded - yielded)"])
        }
    }

    /// One round of the two-stage batch path: maps until the source has no chunk left for
    /// this worker, while a writing thread saves.
    private func mapAndWrite<Writer: BatchChunkWriter>(_ writer: Writer, _ rows: RowMapper) throws {
        let handoff = Handoff<(Batch, Writer.Prepared)>(capacity: 1)
        let failure = Mutex<(any Error)?>(nil)
        let written = Mutex(Totals())
        let writing = ManagedThread(name: "ingest.writer")
        // The writing thread alone uses the writer until it is joined.
        let saving = UncheckedSendable(BatchSaver(writer: writer, afterSave: afterSave, metrics: metrics, logger: logger))
        writing.start { _ in
            var saver = saving.value
            while let (batch, prepared) = handoff.pop() {
                guard failure.withLock({ $0 == nil }) else { continue }
                do {
                    try saver.save(batch, prepared: prepared)
                } catch {
                    failure.withLock { if $0 == nil { $0 = error } }
                    handoff.cancel()
                }
            }
            written.withLock { $0 = saver.totals }
        }
        do {
            // The next batch is mapped while the writer saves this one, not while it saves the one
            // before: two batches (and their chunks' bytes) are held at once, not three. The
            // writer waits on the server far longer than mapping takes, so nothing is lost.
            // Prepared here, on the mapping thread: the writer's thread is left only the writing.
            try map(rows: rows, requests: writer.requests) { batch in
                handoff.push((batch, try writer.prepare(batch.request))) && handoff.waitUntilTaken()
            }
        } catch {
            failure.withLock { if $0 == nil { $0 = error } }
        }
        handoff.finish()
        writing.join()
        totals = totals + written.withLock { $0 }
        if let error = failure.withLock({ $0 }) { throw error }
    }

    private func mapped(since start: Double) {
        let seconds = StageTimes.now() - start
        totals.times.map += seconds
        metrics.add(seconds, to: .map)
    }

    /// The mapping stage: claims chunks and hands their batches on, until none is left.
    /// `sink` takes each batch in order; false stops the mapping.
    private func map(rows: RowMapper, requests: any BatchRequestMaking, sink: (Batch) throws -> Bool) throws {
        // The size of the last full batch: the next is made with room for as much.
        var lastCapacity = BatchInsertRequest.Capacity()
        // The last batch's request, once saved: the next one reuses its memory (`removeAll(text:)`).
        var spare: BatchInsertRequest?
        while !shouldStop() {
            guard let claimed = try source.claim(until: shouldStop) else { return }
            let chunk = claimed.info
            // A missing file (removed meanwhile) only means the records are scanned.
            let ends = claimed.memberEndsFile.flatMap(MemberEndsReader.init(path:))
            totals.times.parse += claimed.readSeconds
            metrics.add(claimed.readSeconds, to: .parse)
            logger.debug("chunk started", metadata: ["chunk": "\(chunk.index)", "records": "\(chunk.records)", "done before": "\(claimed.done)"])
            func fill(_ request: inout BatchInsertRequest) {
                request.removeAll(text: claimed.bytes)
                if let run = rows.lineageRun { request.lineage = (Int64(run), Int64(chunk.index)) }
            }
            var request: BatchInsertRequest
            if let reused = spare.take() {
                request = reused
            } else {
                request = requests.makeRequest(text: claimed.bytes)
                request.reserveCapacity(lastCapacity)
            }
            fill(&request)
            var rejects: [ImportMarker.Reject] = []
            var pending = 0
            var from = claimed.done
            var first = true
            var reason: String?
            func handOn(done: Int) throws -> Bool {
                let save = ChunkSave(chunk: chunk, from: from, done: done, rejects: rejects, bytes: claimed.bytes,
                                     members: rows.members.take())
                if pending == saveEvery { lastCapacity = request.capacity }
                guard try sink(Batch(claimed: claimed, request: request, save: save, first: first)) else { return false }
                // In place: the batch saved (SQLite) holds it no more; one still being
                // written (PostgreSQL) keeps its own, and this request gets new memory.
                fill(&request)
                rejects.removeAll(keepingCapacity: true)
                from = done
                pending = 0
                first = false
                return true
            }
            var mapping = StageTimes.now()
            var next = claimed.done
            var lines = ChunkLines.Iterator(bytes: claimed.bytes, skip: claimed.done)
            ends?.skip(claimed.done)
            while let (range, index) = lines.next() {
                if ends == nil {
                    try rows.add(record: range, number: index, to: &request, reason: &reason)
                } else {
                    try ends!.withNext { try rows.add(record: range, number: index, memberEnds: $0, to: &request, reason: &reason) }
                }
                if let reason {
                    logger.trace("record rejected", metadata: ["chunk": "\(chunk.index)", "index": "\(index)", "reason": "\(reason)"])
                    rejects.append(ImportMarker.Reject(chunk, index: index, reason: reason,
                                                       text: String(decoding: claimed.bytes[range], as: UTF8.self)))
                }
                pending += 1
                next = index + 1
                if pending == saveEvery {
                    mapped(since: mapping)
                    guard try handOn(done: next) else { return }
                    if shouldStop() { return }
                    mapping = StageTimes.now()
                }
            }
            mapped(since: mapping)
            // An empty chunk still gets its (empty) save: the marker says it is done.
            if pending > 0 || (chunk.records == 0 && first) {
                guard try handOn(done: next) else { return }
            }
            // Kept for the next chunk without this chunk's bytes, which the source may read into again.
            request.removeAll(text: [])
            spare = request
        }
    }
}

/// The writing side of a worker's batch path: prepares and saves each batch, in order,
/// and leaves the rest of a chunk another process took over.
private struct BatchSaver<Writer: BatchChunkWriter> {
    let writer: Writer
    let afterSave: (ImportWorker.ChunkResult) throws -> Void
    let metrics: ImportMetrics
    let logger: Logger
    var totals = ChunkWorker.Totals()
    /// The chunk another process took over: its later batches are not saved.
    private var lost: Int?

    init(writer: Writer, afterSave: @escaping (ImportWorker.ChunkResult) throws -> Void, metrics: ImportMetrics, logger: Logger) {
        self.writer = writer
        self.afterSave = afterSave
        self.metrics = metrics
        self.logger = logger
    }

    /// - Throws: what the writer or `afterSave` throws, but `ChunkTakenOver`.
    mutating func save(_ batch: ChunkWorker.Batch) throws {
        if batch.first { lost = nil }
        guard lost != batch.save.chunk.index else { return }
        let started = StageTimes.now()
        try save(batch, prepared: try writer.prepare(batch.request), started: started)
    }

    /// Saves `batch`, prepared already (`BatchChunkWriter.prepare`).
    /// - Throws: what the writer or `afterSave` throws, but `ChunkTakenOver`.
    mutating func save(_ batch: ChunkWorker.Batch, prepared: Writer.Prepared, started: Double = StageTimes.now()) throws {
        let chunk = batch.save.chunk
        // A new claim of a chunk this worker left (given back, then claimed again) is saved.
        if batch.first { lost = nil }
        guard lost != chunk.index else { return }
        do {
            var waited = 0.0
            if batch.first {
                // The batch was mapped and staged before the wait, overlapping the writes of the
                // chunks before this one; its keys are looked up in its transaction.
                let waiting = StageTimes.now()
                try batch.claimed.waitForTurn()
                waited = StageTimes.now() - waiting
                logger.debug("turn to commit", metadata: ["chunk": "\(chunk.index)", "waited ms": "\(Int(waited * 1000))"])
            }
            let result = try writer.save(prepared, batch.save)
            let seconds = StageTimes.now() - started - waited
            totals.times.waiting += waited
            totals.times.save += seconds
            totals.times.locked += result.lockedSeconds
            totals.retries += result.retries
            metrics.add(waited, to: .waiting)
            metrics.add(seconds, to: .save)
            metrics.add(result.lockedSeconds, to: .locked)
            metrics.retried(result.retries)
            for rejection in result.rejected.dropFirst(batch.save.rejects.count) {
                logger.trace("record rejected at save", metadata: ["chunk": "\(chunk.index)", "index": "\(rejection.record)",
                                                                   "reason": "\(rejection.reason)"])
            }
            logger.debug("saved", metadata: ["chunk": "\(chunk.index)", "done": "\(batch.save.done)", "records": "\(result.records)",
                                             "rejected": "\(result.rejected.count)", "ms": "\(Int(seconds * 1000))",
                                             "locked ms": "\(Int(result.lockedSeconds * 1000))"])
            let outcomes = RecordOutcomes(written: result)
            try afterSave(ImportWorker.ChunkResult(imported: result.records, rejected: result.rejected.count, outcomes: outcomes,
                                                   seconds: seconds, lockedSeconds: result.lockedSeconds))
            if batch.save.endsChunk {
                batch.claimed.finished()
                totals.chunks += 1
                metrics.chunkDone()
                logger.debug("chunk finished", metadata: ["chunk": "\(chunk.index)"])
            }
        } catch is ChunkYielded {
            lost = chunk.index
            totals.yielded += 1
            logger.debug("chunk given back before its first save", metadata: ["chunk": "\(chunk.index)"])
        } catch is ChunkTakenOver {
            lost = chunk.index
            totals.leasesLost += 1
            metrics.leaseLost()
            logger.warning("chunk lease lost to another process (this process stalled longer than the lease)",
                           metadata: ["chunk": "\(chunk.index)"])
        }
    }
}
