import Foundation
import IngestJSON
import IngestStore
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A SQLite store's side of an import run (`Importer`): the run is recorded in the store's
/// metadata (`ImportMarker`) behind a lock file, the split writes chunk files next to the
/// store and offers them to a local queue, and the workers save in feed order. A main
/// context merges every save and reports progress.
struct SQLiteRunStore: RunStore {
    let importer: Importer
    /// The run's pipeline (an importer of a SQLite store always has one).
    let spec: PipelineSpec

    @_optimize(none)
    func begin(started: Double) throws -> SQLiteRunSession {
        let options = importer.options
        // Checked before the store records anything: a mistyped path must not become the store's feed.
        // (Not read at all from chunk files alone: found by probing, a process substitution's
        // /dev/fd path is gone, or another file, by the time the run is resumed.)
        guard options.withoutFeed || FileOps.isReadOnce(options.feed) || HTTPByteSource.isURL(options.feed) || FileOps.fileSize(options.feed) != nil else {
            throw ImportError(.feedUnreadable(path: options.feed, exists: FileManager.default.fileExists(atPath: options.feed)))
        }
        let given = importer.coordinator
        if given != nil, options.deleteStore {
            throw ImportError("\(options.store): deleteStore cannot delete a store a coordinator has open; delete its file before opening it, or import into a new container")
        }
        // A file that is not an Ingest store is refused before anything touches it (no lock
        // file beside it, no WAL mode, and never deleted by --delete-store). A given
        // coordinator has its store open already.
        if given == nil { try PersistentStoreCoordinator.checkIsStoreOrNew(at: options.store) }
        // Beside the store's file, or for a store in memory in the temporary directory,
        // where they go with the store.
        let files = importer.filesBase
        if let given, given.isInMemory {
            given.whenGone("import run files") { Importer.removeRunFiles(base: files) }
        }
        let lock = try ImportLock(store: files)
        var bulkLoad: PersistentStoreCoordinator?
        var chunkLock: ChunkDirectoryLock?
        do {
            // Refused before anything is recorded or removed: a run that could never split
            // would be advised to resume forever.
            if let chunks = options.chunks {
                try Self.checkChunksDirectory(chunks, store: files)
                chunkLock = try ChunkDirectoryLock(directory: chunks, store: options.store)
            }
            try reportsWritable()
            if options.deleteStore { try deleteStore() }
            // Readers here only look keys up: a small cache each keeps memory flat however big the store grows.
            let coordinator = try given ?? PersistentStoreCoordinator(model: spec.model, path: options.store, readerCacheKiB: 512)
            coordinator.recordsHistory = spec.history
            let (begun, abandoned) = try importer.beginRun(coordinator, spec: spec, chunkSize: options.chunkSize ?? spec.chunkSize)
            // A resumed run's own --chunks directory is held as a new run's is.
            if chunkLock == nil, !begun.chunks.hasPrefix(Importer.absolute(files) + ".chunks/") {
                chunkLock = try ChunkDirectoryLock(directory: begun.chunks, store: options.store)
            }
            if !options.keepIndexes { try coordinator.deferSecondaryIndexes() }
            try coordinator.beginBulkLoad(indexesDeferred: !options.keepIndexes)
            bulkLoad = coordinator
            return try SQLiteRunSession(importer: importer, spec: spec, lock: lock, chunkLock: chunkLock, started: started,
                                        coordinator: coordinator, begun: begun, abandoned: abandoned)
        } catch {
            try? bulkLoad?.endBulkLoad()
            chunkLock?.release()
            lock.release()
            throw error
        }
    }

    /// Refuses a `--chunks` path that is not a directory (a file, the store itself).
    static func checkChunksDirectory(_ chunks: String, store: String) throws {
        var info = stat()
        let isStore = ["", "-wal", "-shm", ".lock"].contains { Importer.absolute(chunks) == Importer.absolute(store) + $0 }
        if isStore || (stat(chunks, &info) == 0 && info.st_mode & S_IFMT != S_IFDIR) {
            throw ImportError("--chunks \(chunks) is \(isStore ? "the store itself" : "not a directory"): give a directory (new or one of Ingest's chunk directories) for the chunk files")
        }
    }

    /// The report and rejects files beside the store are written at the run's end: a path
    /// that cannot be written (a directory, a link) is refused before the run begins.
    private func reportsWritable() throws {
        try FileOps.checkWritable(importer.reportPath)
        try FileOps.checkWritable(importer.rejectsPath)
    }

    /// `--delete-store`: the store's own files, and the chunk files its runs left. Nothing at
    /// all when there is no store yet (the files beside such a path are not a store's), and
    /// never what is not Ingest's: other files in STORE.chunks stay, with the directory.
    private func deleteStore() throws {
        let store = importer.options.store
        guard FileOps.fileSize(store).map({ $0 > 0 }) == true else { return }
        for suffix in ["", "-wal", "-shm", ".rejects.ndjson", ".report.json"] { try FileOps.removeRegularFile(store + suffix) }
        let chunks = store + ".chunks"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: chunks)) ?? [] where Importer.isRunDirectoryName(name) {
            Importer.deleteChunks(chunks + "/" + name)
        }
    }
}

/// A SQLite run under way: everything `Importer.run` used to keep in its locals, made by
/// `SQLiteRunStore.begin` on the importing thread.
final class SQLiteRunSession: RunSession {
    let importer: Importer
    let spec: PipelineSpec
    let lock: ImportLock
    let chunkLock: ChunkDirectoryLock?
    let coordinator: PersistentStoreCoordinator
    let begun: ImportMarker.Run
    let abandoned: Int?
    let runRecord: Locked<ImportMarker.Run>
    let state: RunState
    let workers: SQLiteRunWorkers
    let workerCount: Int
    let saveEvery: Int
    let logger: Logger
    let started: Double
    let main: ObjectContext
    let counts: Locked<[String: Int]>
    let remade: [String]
    let split: SplitStage

    @_optimize(none)
    init(importer: Importer, spec: PipelineSpec, lock: ImportLock, chunkLock: ChunkDirectoryLock?, started: Double,
         coordinator: PersistentStoreCoordinator, begun: ImportMarker.Run, abandoned: Int?) throws {
        let options = importer.options
        self.importer = importer
        self.spec = spec
        self.lock = lock
        self.chunkLock = chunkLock
        self.started = started
        self.coordinator = coordinator
        self.begun = begun
        self.abandoned = abandoned
        let chunkSize = options.chunkSize ?? spec.chunkSize
        let runRecord = Locked(begun)
        self.runRecord = runRecord
        let keys = ImportMarker.Keys(run: begun.number)
        let done = try ImportMarker.progress(coordinator, keys)
        let rejectedBefore = try coordinator.metadata(withPrefix: keys.rejectPrefix).count
        workerCount = min(PipelineSpec.maxWorkers, max(1, options.workers ?? spec.workers ?? ProcessInfo.processInfo.activeProcessorCount))
        saveEvery = options.saveEvery ?? begun.saveEvery ?? spec.saveEvery
        let directory = begun.chunks
        let state = RunState(rejected: rejectedBefore, workers: workerCount, started: started,
                             metrics: ImportMetrics(store: "sqlite", entity: spec.recordEntity, factory: options.metrics))
        self.state = state
        var logger = options.logger
        logger[metadataKey: "run"] = "\(begun.number)"
        self.logger = logger
        logger.info("import run started", metadata: [
            "feed": "\(options.feed)", "store": "\(options.store)", "workers": "\(workerCount)", "chunks": "\(directory)",
            "continued": "\(!done.isEmpty)", "abandoned": "\(abandoned.map(String.init) ?? "none")",
        ])

        // The main context: starts from the store's counts and merges every worker's save.
        let main = ObjectContext(coordinator: coordinator, name: "main")
        self.main = main
        var storeCounts: [String: Int] = [:]
        for entity in spec.model.entities { storeCounts[entity.name] = try coordinator.count(entity.name) }
        let counts = Locked(storeCounts)
        self.counts = counts
        main.performAndWait {
            main.onDidMerge = { [importer] notice in
                // Counted by entity first: a notice holds thousands of IDs and a few entity
                // names, which then need hashing once each, not once an ID.
                var changes: [(entity: String, count: Int)] = []
                func count(_ ids: Set<ObjectID>, _ sign: Int) {
                    for id in ids {
                        if let index = changes.firstIndex(where: { $0.entity == id.entityName }) {
                            changes[index].count += sign
                        } else {
                            changes.append((id.entityName, sign))
                        }
                    }
                }
                count(notice.inserted, 1)
                count(notice.deleted, -1)
                let now = counts.withLock { counts in
                    for (entity, change) in changes { counts[entity, default: 0] += change }
                    return counts
                }
                importer.publish(state.progress(counts: now, elapsed: StageTimes.now() - started, isFinal: false))
            }
            main.automaticallyMergesChangesFromCoordinator = true
        }

        let (remade, verified) = try Importer.removeChangedChunks(directory, done: done)
        self.remade = remade
        var splitOptions = SplitOptions(feed: spec.feedOptions, chunkSize: chunkSize, form: spec.recordForm)
        splitOptions.withoutFeed = options.withoutFeed
        splitOptions.recordsDone = done
        let batchPath = !options.objectPath
            && importer.makeBatchPath(coordinator, spec: spec, firstRowOfRun: begun.firstRowOfRun, keys: keys) != nil
        // Only the batch path's capture steps over members by their ends.
        splitOptions.writesMemberEnds = batchPath
        let queue = ChunkQueue(consumers: workerCount)
        let split = SplitStage(.init(
            feed: options.feed, directory: directory, options: splitOptions, done: done,
            sums: try ImportMarker.sums(coordinator, keys),
            check: { [importer, store = options.store] manifest in
                let recorded = runRecord.withLock { $0 }
                if !recorded.feedChecksum.isEmpty, let sum = manifest.feed.checksum, sum != recorded.feedChecksum {
                    throw importer.unfinished(recorded, ["the feed differs (same size, other content)"])
                }
                // Found by probing: a manifest edited to list fewer chunks (its total lowered to
                // match) finished the run without the rest of the feed.
                if recorded.chunkCount > 0, manifest.chunks.count != recorded.chunkCount {
                    throw ImportError("the chunk directory \(directory) was changed: its manifest lists \(manifest.chunks.count) chunks, and the run's split made \(recorded.chunkCount); delete \(directory) and run ingest resume \(store) to split the feed into it again")
                }
            },
            record: { manifest in
                let updated = runRecord.withLock { run -> ImportMarker.Run? in
                    guard run.feedChecksum.isEmpty || run.chunkCount != manifest.chunks.count else { return nil }
                    run.feedChecksum = manifest.feed.checksum ?? ""
                    run.chunkCount = manifest.chunks.count
                    return run
                }
                if let updated { try ImportMarker.save(updated, coordinator) }
            },
            mismatch: { [importer] in importer.unfinished(runRecord.withLock { $0 }, [$0]) }), queue: queue, state: state, started: started)
        self.split = split
        workers = SQLiteRunWorkers(importer: importer, spec: spec, coordinator: coordinator, keys: keys, firstRowOfRun: begun.firstRowOfRun,
                                   batchPath: batchPath, directory: directory, done: done, verified: verified,
                                   queue: queue, split: split, state: state)
        importer.active.withLock { $0 = Importer.ActiveRun(state: state, split: split, queue: queue) }
        if importer.cancellation.load(ordering: .relaxed) { importer.cancel() }
        logger.info("workers starting", metadata: ["path": "\(batchPath ? "batch" : "objects")"])
    }

    func start() {
        split.start()
    }

    @_optimize(none)
    func end(totals: ChunkWorker.Totals) throws -> ImportReport {
        defer {
            importer.active.withLock { $0 = nil }
            try? coordinator.endBulkLoad()
            chunkLock?.release()
            lock.release()
        }
        let options = importer.options
        var stages = totals.times
        let (finishedManifest, splitSeconds) = split.wait()
        if let manifest = finishedManifest {
            logger.info("split finished", metadata: ["chunks": "\(manifest.chunks.count)", "records": "\(manifest.totalRecords)",
                                                     "seconds": "\(splitSeconds)"])
        }
        // Every save's merge was queued before its save returned: this drains them.
        main.performAndWait {
            main.automaticallyMergesChangesFromCoordinator = false
            main.onDidMerge = nil
        }
        let finalCounts = counts.withLock { $0 }
        let keys = ImportMarker.Keys(run: begun.number)
        let members = try ImportMarker.members(coordinator, keys)
        // Every save of the run, this process's and any stopped one's before it.
        let outcomes = try ImportMarker.outcomes(coordinator, keys)
        let rejectedInAllRuns = try importer.writeRejects(coordinator)
        // A replay's finish removes the rejects it replayed (its own rejects stand for those that failed again).
        let replayed = try ImportMarker.replayLinks(coordinator, run: begun.number)
        if let error = state.failure {
            logger.info("import run stopped", metadata: ["reason": "\(error)"])
            if let error = error as? FeedError, var run = try ImportMarker.runs(coordinator).first(where: { $0.number == begun.number }) {
                run.feedError = error.description
                try ImportMarker.save(run, coordinator)
            }
            throw error
        }
        guard let manifest = finishedManifest else { throw ImportError("the split ended without a manifest") }
        let indexing = StageTimes.now()
        if try coordinator.secondaryIndexesDeferred() { try coordinator.restoreSecondaryIndexes() }
        let indexSeconds = StageTimes.now() - indexing
        logger.info("secondary indexes built", metadata: ["seconds": "\(indexSeconds)"])
        var storeCounts: [String: Int] = [:]
        for entity in spec.model.entities { storeCounts[entity.name] = try coordinator.count(entity.name) }
        let seconds = StageTimes.now() - started
        importer.publish(state.progress(counts: finalCounts, elapsed: seconds, isFinal: true))
        stages.split = splitSeconds
        stages.index = indexSeconds
        let imported = state.imported
        let importedBytes = Double(manifest.feed.byteSize ?? 0) * Double(imported.imported + imported.rejected)
            / Double(max(1, manifest.totalRecords))
        let deletedChunks = options.keepChunks ? nil : manifest.chunks.count
        var report = ImportReport(feed: options.feed, store: options.store, records: manifest.totalRecords,
                                  feedBytes: manifest.feed.byteSize ?? 0, imported: imported.imported,
                                  rejectedThisRun: imported.rejected, rejected: rejectedInAllRuns - (replayed?.count ?? 0), counts: storeCounts,
                                  chunks: manifest.chunks.count, workers: workerCount, seconds: seconds,
                                  recordsPerSecond: Double(imported.imported + imported.rejected) / max(seconds, 1e-9),
                                  megabytesPerSecond: importedBytes / 1e6 / max(seconds, 1e-9),
                                  peakRSSBytes: ImportReport.peakRSS(), stages: stages, rejectsFile: importer.rejectsPath,
                                  staleLock: lock.previous.map { "pid \($0.pid) on \($0.host), started \($0.startedAt)" },
                                  remadeChunks: remade, writePath: workers.batchPath ? "batch" : "objects",
                                  stageRates: StageRates(stages, records: imported.imported + imported.rejected),
                                  timeline: state.timeline, outcomes: outcomes, run: begun.number,
                                  abandonedRun: abandoned, chunksDirectory: begun.chunks, deletedChunks: deletedChunks,
                                  pipelineInferred: begun.inferred, outsideRecords: manifest.outsideRecords,
                                  members: members.isEmpty ? nil : members,
                                  steppedRecords: workers.batchPath ? totals.stepped : nil)
        report.replayed = replayed?.count
        try report.write(to: importer.reportPath)
        // The run is finished once everything it writes is written: a report that could not
        // be written leaves it unfinished, and running the import again finishes it.
        var finished = runRecord.withLock { $0 }
        finished.state = .finished
        finished.ended = ImportMarker.now()
        finished.outcomes = outcomes
        finished.keptChunks = options.keepChunks
        try ImportMarker.finish(finished, coordinator, replaying: replayed)
        if replayed != nil {
            try importer.writeRejects(coordinator)
            Importer.removeReplayFiles(feed: finished.feed, pipeline: finished.pipeline)
        }
        if options.keepChunks { Importer.deleteMemberEnds(begun.chunks) } else { Importer.deleteChunks(begun.chunks) }
        logger.info("import run finished", metadata: [
            "imported": "\(report.imported)", "rejected": "\(report.rejectedThisRun)", "seconds": "\(report.seconds)",
            "inserted": "\(outcomes.inserted)", "updated": "\(outcomes.updated)", "unchanged": "\(outcomes.unchanged)",
        ])
        return report
    }
}

/// The workers' side of a SQLite run: chunks from the local queue, saves through the batch
/// path when the pipeline allows it, else through a private context per worker.
struct SQLiteRunWorkers: RunWorkers {
    let importer: Importer
    let spec: PipelineSpec
    let coordinator: PersistentStoreCoordinator
    let keys: ImportMarker.Keys
    let firstRowOfRun: [String: Int64]
    let batchPath: Bool
    let directory: String
    let done: [Int: Int]
    /// Chunks found intact before the run (their workers need not hash them again).
    let verified: Set<Int>
    let queue: ChunkQueue
    let split: SplitStage
    let state: RunState

    func makeWorker(_ number: Int, _ logger: Logger) throws -> (source: any ChunkSource, path: ChunkWorker.Path) {
        let (verified, split) = (verified, split)
        let source = SQLiteChunkSource(queue: queue, directory: directory, done: done,
                                       trusted: { verified.contains($0) || split.wrote($0) },
                                       endsWritten: { split.wrote($0) }, state: state)
        if batchPath, let (writer, rows) = importer.makeBatchPath(coordinator, spec: spec, firstRowOfRun: firstRowOfRun, keys: keys) {
            return (source, .batch(writer, rows))
        }
        let context = ObjectContext(coordinator: coordinator, name: "worker-\(number + 1)")
        let importer = context.performAndWait { ImportWorker(context: context, spec: spec, keys: keys, firstRowOfRun: firstRowOfRun) }
        importer.logger = logger
        return (source, .objects(importer))
    }

    func saved(worker: Int, _ result: ImportWorker.ChunkResult) throws {
        let rejected = state.saved(result, worker: worker)
        if importer.saves.add(1, ordering: .relaxed).newValue >= importer.stopAfterSaves.load(ordering: .relaxed) {
            throw ImportError("stopped after \(importer.saves.load(ordering: .relaxed)) saves")
        }
        if importer.cancellation.load(ordering: .relaxed) { throw ImportInterrupted() }
        if let maxRejects = importer.options.maxRejects, rejected > maxRejects {
            throw ImportError(.tooManyRejects(rejected: rejected, limit: maxRejects, rejectsFile: importer.rejectsPath))
        }
    }

    func stopsClaiming() -> Bool { false }

    func workersFailed() {
        split.cancel()
        queue.close()
    }
}
