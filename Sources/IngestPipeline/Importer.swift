import Dispatch
import Foundation
import IngestJSON
import IngestStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Imports a feed into a store with a pipeline. The splitter writes chunk files on one
/// thread while W workers, each with its own private context, import finished chunks
/// in order, saving every K records with the resume marker in the same transaction. A
/// main context merges every save by object ID and reports progress. Running it again
/// with the same feed, pipeline and store continues where the last run stopped.
public final class Importer: Sendable {
    public struct Options: Sendable {
        public var feed: String
        public var store: String
        /// Where the chunk files go; default: next to the store, `STORE.chunks`.
        public var chunks: String?
        public var workers: Int?
        public var saveEvery: Int?
        public var chunkSize: Int?
        /// Start over, even in a store filled from another feed or pipeline.
        public var restart: Bool
        /// Stop (resumably) once more than this many records have been rejected in all.
        public var maxRejects: Int?
        /// Keep the secondary indexes during the import instead of building them at the end.
        public var keepIndexes: Bool
        /// The pipeline file's path, recorded for `ingest resume`.
        public var pipelinePath: String?
        /// Write through managed objects and contexts even where the batch path applies
        /// (it is chosen whenever the pipeline allows: see `RowMapper`).
        public var objectPath = false

        public init(feed: String, store: String, chunks: String? = nil, workers: Int? = nil, saveEvery: Int? = nil,
                    chunkSize: Int? = nil, restart: Bool = false, maxRejects: Int? = nil, keepIndexes: Bool = false,
                    pipelinePath: String? = nil) {
            self.feed = feed
            self.store = store
            self.chunks = chunks
            self.workers = workers
            self.saveEvery = saveEvery
            self.chunkSize = chunkSize
            self.restart = restart
            self.maxRejects = maxRejects
            self.keepIndexes = keepIndexes
            self.pipelinePath = pipelinePath
        }
    }

    /// Set it (from a signal handler's queue, say) to stop at the next save boundary;
    /// `run()` then throws `ImportInterrupted`.
    public let cancellation = Atomic<Bool>(false)

    public let spec: PipelineSpec
    public let options: Options
    /// Tests stop the run after this many saves (in all workers together), as a crash would.
    let stopAfterSaves = Atomic<Int>(Int.max)
    private let saves = Atomic<Int>(0)
    private let listeners = Mutex<[UUID: @Sendable (ImportProgress) -> Void]>([:])

    public init(spec: PipelineSpec, options: Options) {
        self.spec = spec
        self.options = options
    }

    public var rejectsPath: String { options.store + ".rejects.ndjson" }
    public var reportPath: String { options.store + ".report.json" }
    private var chunksDirectory: String { options.chunks ?? options.store + ".chunks" }

    /// Calls `handler` with every progress event of `run()` (on the main context's
    /// queue, in order). Keep the token to stop with `removeProgressObserver`.
    @discardableResult
    public func addProgressObserver(_ handler: @escaping @Sendable (ImportProgress) -> Void) -> UUID {
        let token = UUID()
        listeners.withLock { $0[token] = handler }
        return token
    }

    public func removeProgressObserver(_ token: UUID) {
        _ = listeners.withLock { $0.removeValue(forKey: token) }
    }

    /// The progress events of `run()` as an async sequence; it finishes after the final
    /// event (or when the reading task is cancelled). Ask for it before calling `run()`.
    public func progressEvents() -> AsyncStream<ImportProgress> {
        let (stream, continuation) = AsyncStream<ImportProgress>.makeStream()
        let token = addProgressObserver { event in
            continuation.yield(event)
            if event.isFinal { continuation.finish() }
        }
        continuation.onTermination = { [weak self] _ in self?.removeProgressObserver(token) }
        return stream
    }

    /// Runs (or continues) the import.
    /// - Throws: `ImportError` when the store belongs to another feed or pipeline (unless
    ///   `restart`) or more records were rejected than `maxRejects`; `ImportInterrupted`
    ///   after `cancellation`; `FeedError`, `SplitError`, `IOError`, `StoreError` from the stages.
    public func run() throws -> ImportReport {
        let started = StageTimes.now()
        let lock = try ImportLock(store: options.store)
        defer { lock.release() }
        if options.restart {
            for suffix in ["", "-wal", "-shm", ".rejects.ndjson", ".report.json"] {
                try? FileManager.default.removeItem(atPath: options.store + suffix)
            }
        }
        // Readers here only look keys up: a small cache each keeps memory flat however big the store grows.
        let coordinator = try PersistentStoreCoordinator(model: spec.model, path: options.store, readerCacheKiB: 512)
        let chunkSize = options.chunkSize ?? spec.chunkSize
        let recorded = try checkIdentity(coordinator, chunkSize: chunkSize)
        if !options.keepIndexes { try coordinator.deferSecondaryIndexes() }
        try coordinator.beginBulkLoad(indexesDeferred: !options.keepIndexes)
        defer { try? coordinator.endBulkLoad() }
        let done = try ImportMarker.progress(coordinator)
        let firstRowOfRun = try coordinator.nextRowNumbers()
        let rejectedBefore = try coordinator.metadata(withPrefix: ImportMarker.rejectPrefix).count
        let workerCount = max(1, options.workers ?? spec.workers ?? ProcessInfo.processInfo.activeProcessorCount)
        let saveEvery = options.saveEvery ?? spec.saveEvery
        let directory = chunksDirectory
        let state = RunState(rejected: rejectedBefore, workers: workerCount, started: started)

        // The main context: starts from the store's counts and merges every worker's save.
        let main = ObjectContext(coordinator: coordinator, name: "main")
        var counts: [String: Int] = [:]
        for entity in spec.model.entities { counts[entity.name] = try coordinator.count(entity.name) }
        main.perform {
            main.onDidMerge = { [self] notice in
                for id in notice.inserted { counts[id.entityName, default: 0] += 1 }
                for id in notice.deleted { counts[id.entityName, default: 0] -= 1 }
                publish(state.progress(counts: counts, elapsed: StageTimes.now() - started, isFinal: false))
            }
            main.automaticallyMergesChangesFromCoordinator = true
        }

        let (remade, verified) = try removeChangedChunks(done: done)
        let queue = ChunkQueue(consumers: workerCount)
        let split = SplitStage(.init(
            feed: options.feed, directory: directory,
            options: SplitOptions(feed: FeedOptions(shape: spec.feed), chunkSize: chunkSize, force: options.restart), done: done,
            check: { [self] in try checkFeedHash($0, recorded: recorded) },
            record: { [self] in try recordFeedHash(coordinator, $0, recorded: recorded) },
            mismatch: { [self] in mismatch([$0]) }), queue: queue, state: state, started: started)

        let maxRejects = options.maxRejects
        let workers = WorkerStage(
            coordinator: coordinator, spec: spec, directory: directory, done: done, saveEvery: saveEvery,
            trusted: { verified.contains($0) || split.wrote($0) },
            afterSave: { [self] worker, saved in
                let rejected = state.saved(saved, worker: worker)
                if saves.add(1, ordering: .relaxed).newValue >= stopAfterSaves.load(ordering: .relaxed) {
                    throw ImportError("stopped after \(saves.load(ordering: .relaxed)) saves")
                }
                if cancellation.load(ordering: .relaxed) { throw ImportInterrupted() }
                if let maxRejects, rejected > maxRejects {
                    throw ImportError("stopped: \(rejected) records rejected, more than --max-rejects \(maxRejects) (see \(rejectsPath)); raise it and run ingest resume \(options.store) to go on")
                }
            },
            objectPath: options.objectPath, firstRowOfRun: firstRowOfRun)
        let batchPath = workers.batchPath
        var stages = workers.run(count: workerCount, batch: batchPath, queue: queue, state: state, split: split)
        let (finishedManifest, splitSeconds) = split.wait()
        // Every save's merge was queued before its save returned: this drains them.
        let finalCounts = main.perform {
            main.automaticallyMergesChangesFromCoordinator = false
            main.onDidMerge = nil
            return counts
        }

        let rejects = try ImportMarker.rejects(coordinator)
        try writeRejects(rejects)
        if let error = state.failure { throw error }
        guard let manifest = finishedManifest else { throw ImportError("the split ended without a manifest") }
        let indexing = StageTimes.now()
        if try coordinator.secondaryIndexesDeferred() { try coordinator.restoreSecondaryIndexes() }
        let indexSeconds = StageTimes.now() - indexing
        var storeCounts: [String: Int] = [:]
        for entity in spec.model.entities { storeCounts[entity.name] = try coordinator.count(entity.name) }
        let seconds = StageTimes.now() - started
        publish(state.progress(counts: finalCounts, elapsed: seconds, isFinal: true))
        stages.split = splitSeconds
        stages.index = indexSeconds
        let imported = state.imported
        let importedBytes = Double(manifest.feed.byteSize ?? 0) * Double(imported.imported + imported.rejected)
            / Double(max(1, manifest.totalRecords))
        let report = ImportReport(feed: options.feed, store: options.store, records: manifest.totalRecords,
                                  feedBytes: manifest.feed.byteSize ?? 0, imported: imported.imported,
                                  rejectedThisRun: imported.rejected, rejected: rejects.count, counts: storeCounts,
                                  chunks: manifest.chunks.count, workers: workerCount, seconds: seconds,
                                  recordsPerSecond: Double(imported.imported + imported.rejected) / max(seconds, 1e-9),
                                  megabytesPerSecond: importedBytes / 1e6 / max(seconds, 1e-9),
                                  peakRSSBytes: ImportReport.peakRSS(), stages: stages, rejectsFile: rejectsPath,
                                  staleLock: lock.previous.map { "pid \($0.pid) on \($0.host), started \($0.startedAt)" },
                                  remadeChunks: remade, writePath: batchPath ? "batch" : "objects",
                                  stageRates: StageRates(stages, records: imported.imported + imported.rejected),
                                  timeline: state.timeline, outcomes: state.outcomes)
        try report.write(to: reportPath)
        return report
    }

    /// Before a resumed run: pending chunks of a finished split whose bytes no longer
    /// match the manifest (edited, truncated, deleted) are removed, so the splitter makes
    /// them again from the feed; a changed feed makes the splitter stop with the reason.
    /// Returns the file names removed, and the chunks found intact (their workers need
    /// not hash them again).
    private func removeChangedChunks(done: [Int: Int]) throws -> (removed: [String], verified: Set<Int>) {
        guard let manifest = try SplitManifest.load(fromDirectory: chunksDirectory) else { return ([], []) }
        var removed: [String] = []
        var verified = Set<Int>()
        for chunk in manifest.chunks where (done[chunk.index] ?? 0) < chunk.records {
            let path = chunksDirectory + "/" + chunk.file
            guard FileOps.fileSize(path) != nil else {
                removed.append(chunk.file)
                continue
            }
            if try Splitter.fullHash(path) == chunk.checksum {
                verified.insert(chunk.index)
            } else {
                try FileManager.default.removeItem(atPath: path)
                removed.append(chunk.file)
            }
        }
        return (removed, verified)
    }

    private func publish(_ event: ImportProgress) {
        for handler in listeners.withLock({ Array($0.values) }) { handler(event) }
    }

    /// A store records the feed and pipeline it is filled from; another pair is refused.
    /// Returns the recorded identity (written now for a new store, its feed hash to come).
    private func checkIdentity(_ coordinator: PersistentStoreCoordinator, chunkSize: Int) throws -> ImportMarker.Identity {
        let feedSize = FileOps.fileSize(options.feed) ?? -1
        if let recorded = try coordinator.metadata(forKey: ImportMarker.identityKey, as: ImportMarker.Identity.self) {
            var reasons: [String] = []
            if recorded.feedByteSize != feedSize { reasons.append("the feed differs (\(recorded.feedByteSize) bytes then, \(feedSize) now)") }
            if recorded.pipelineSHA256 != spec.hash { reasons.append("the pipeline differs") }
            if recorded.chunkSize != chunkSize { reasons.append("the chunk size differs (\(recorded.chunkSize) then, \(chunkSize) now)") }
            if reasons.isEmpty, !recorded.feedChecksum.isEmpty,
               FileOps.fileSize(chunksDirectory + "/" + SplitManifest.fileName) == nil,
               try Splitter.fullHash(options.feed) != recorded.feedChecksum {
                // Without a finished split to compare with, the feed's hash is checked before any chunk is imported.
                reasons.append("the feed differs (same size, other content)")
            }
            guard reasons.isEmpty else { throw mismatch(reasons) }
            return recorded
        }
        let identity = ImportMarker.Identity(feedByteSize: feedSize, feedChecksum: "", pipelineSHA256: spec.hash,
                                             chunks: 0, chunkSize: chunkSize)
        let context = ObjectContext(coordinator: coordinator, name: "marker")
        try context.perform {
            try context.setMetadata(identity, forKey: ImportMarker.identityKey)
            try context.setMetadata(ImportMarker.Run(feed: absolute(options.feed), pipeline: options.pipelinePath.map(absolute),
                                                     chunks: absolute(chunksDirectory), saveEvery: options.saveEvery),
                                    forKey: ImportMarker.runKey)
            try context.save()
        }
        return identity
    }

    private func mismatch(_ reasons: [String]) -> ImportError {
        ImportError("\(options.store) is being filled from another import: \(reasons.joined(separator: "; ")); pass --restart to start over")
    }

    /// A finished split's feed hash must be the one the store recorded, if any.
    private func checkFeedHash(_ manifest: SplitManifest, recorded: ImportMarker.Identity) throws {
        if !recorded.feedChecksum.isEmpty, let sum = manifest.feed.checksum, sum != recorded.feedChecksum {
            throw mismatch(["the feed differs (same size, other content)"])
        }
    }

    private func recordFeedHash(_ coordinator: PersistentStoreCoordinator, _ manifest: SplitManifest,
                                recorded: ImportMarker.Identity) throws {
        guard recorded.feedChecksum.isEmpty || recorded.chunks != manifest.chunks.count else { return }
        var identity = recorded
        identity.feedChecksum = manifest.feed.checksum ?? ""
        identity.chunks = manifest.chunks.count
        let context = ObjectContext(coordinator: coordinator, name: "marker")
        try context.perform {
            try context.setMetadata(identity, forKey: ImportMarker.identityKey)
            try context.save()
        }
    }

    private func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    private func writeRejects(_ rejects: [ImportMarker.Reject]) throws {
        var text = ""
        for reject in rejects {
            let line = JSONValue.object([
                JSONMember("chunk", .number(String(reject.chunk))), JSONMember("index", .number(String(reject.index))),
                JSONMember("record", .number(String(reject.record))), JSONMember("reason", .string(reject.reason)),
                JSONMember("text", .string(reject.text)),
            ])
            text += line.description + "\n"
        }
        try FileOps.writeAtomically(Array(text.utf8), to: rejectsPath)
    }
}

/// The run stopped at a save boundary because it was asked to (SIGINT, SIGTERM).
public struct ImportInterrupted: Error, Sendable {}
