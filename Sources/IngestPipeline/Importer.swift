import Dispatch
import Foundation
import IngestJSON
import IngestStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What an import run did.
public struct ImportReport: Sendable {
    /// Records in the feed.
    public var records: Int
    /// Records this run imported (a resumed run counts only its own).
    public var imported: Int
    /// Records rejected so far, by this run and earlier ones.
    public var rejected: Int
    /// Objects per entity in the store at the end.
    public var counts: [String: Int]
    public var chunks: Int
    public var seconds: Double
    public var rejectsFile: String
}

/// Imports a feed into a store with a pipeline: splits it into chunks, then workers,
/// each with its own private context, import the chunks in order, saving every K
/// records with the resume marker in the same transaction. Running it again with the
/// same feed, pipeline and store continues where the last run stopped.
public final class Importer: Sendable {
    public struct Options: Sendable {
        public var feed: String
        public var store: String
        /// Where the chunk files go; default: next to the store, `STORE.chunks`.
        public var chunks: String?
        public var workers: Int?
        public var saveEvery: Int?
        public var chunkSize: Int?
        /// Start over: a store filled from another feed or pipeline is emptied first.
        public var restart: Bool
        /// The pipeline file's path, recorded for `ingest resume`.
        public var pipelinePath: String?

        public init(feed: String, store: String, chunks: String? = nil, workers: Int? = nil, saveEvery: Int? = nil,
                    chunkSize: Int? = nil, restart: Bool = false, pipelinePath: String? = nil) {
            self.feed = feed
            self.store = store
            self.chunks = chunks
            self.workers = workers
            self.saveEvery = saveEvery
            self.chunkSize = chunkSize
            self.restart = restart
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

    public init(spec: PipelineSpec, options: Options) {
        self.spec = spec
        self.options = options
    }

    public var rejectsPath: String { options.store + ".rejects.ndjson" }
    private var chunksDirectory: String { options.chunks ?? options.store + ".chunks" }

    /// Runs (or continues) the import.
    /// - Throws: `ImportError` when the store belongs to another feed or pipeline (unless
    ///   `restart`); `FeedError`, `SplitError`, `IOError`, `StoreError` from the stages.
    public func run() throws -> ImportReport {
        let clock = ContinuousClock()
        let start = clock.now
        if options.restart {
            for suffix in ["", "-wal", "-shm", ".rejects.ndjson"] { try? FileManager.default.removeItem(atPath: options.store + suffix) }
        }
        let splitOptions = SplitOptions(feed: FeedOptions(shape: spec.feed), chunkSize: options.chunkSize ?? spec.chunkSize,
                                        force: options.restart)
        let manifest = try Splitter(feedPath: options.feed, directory: chunksDirectory, options: splitOptions).run().manifest
        let coordinator = try PersistentStoreCoordinator(model: spec.model, path: options.store)
        try checkIdentity(coordinator, manifest)

        let done = try ImportMarker.progress(coordinator)
        let pending = manifest.chunks.filter { (done[$0.index] ?? 0) < $0.records }
        let queue = Mutex(pending[...])
        let failure = Mutex<(any Error)?>(nil)
        let imported = Atomic<Int>(0)
        let workerCount = max(1, min(options.workers ?? spec.workers ?? ProcessInfo.processInfo.activeProcessorCount, max(1, pending.count)))
        let saveEvery = options.saveEvery ?? spec.saveEvery
        let directory = chunksDirectory
        DispatchQueue.concurrentPerform(iterations: workerCount) { number in
            let context = ObjectContext(coordinator: coordinator, name: "worker-\(number + 1)")
            do {
                try context.perform {
                    let worker = ImportWorker(context: context, spec: spec)
                    while failure.withLock({ $0 == nil }), let chunk = queue.withLock({ $0.popFirst() }) {
                        let result = try worker.importChunk(chunk, directory: directory, skip: done[chunk.index] ?? 0,
                                                            saveEvery: saveEvery) {
                            if saves.add(1, ordering: .relaxed).newValue >= stopAfterSaves.load(ordering: .relaxed) {
                                throw ImportError("stopped after \(saves.load(ordering: .relaxed)) saves")
                            }
                            if cancellation.load(ordering: .relaxed) { throw ImportInterrupted() }
                        }
                        imported.add(result.imported, ordering: .relaxed)
                    }
                }
            } catch {
                failure.withLock { if $0 == nil { $0 = error } }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }

        let rejects = try ImportMarker.rejects(coordinator)
        try writeRejects(rejects)
        var counts: [String: Int] = [:]
        for entity in spec.model.entities { counts[entity.name] = try coordinator.count(entity.name) }
        return ImportReport(records: manifest.totalRecords, imported: imported.load(ordering: .relaxed), rejected: rejects.count,
                            counts: counts, chunks: manifest.chunks.count, seconds: (clock.now - start).seconds,
                            rejectsFile: rejectsPath)
    }

    /// A store records the feed and pipeline it is filled from; another pair is refused.
    private func checkIdentity(_ coordinator: PersistentStoreCoordinator, _ manifest: SplitManifest) throws {
        let identity = ImportMarker.Identity(feedByteSize: manifest.feed.byteSize ?? 0, feedSHA256: manifest.feed.sha256 ?? "",
                                             pipelineSHA256: spec.hash, chunks: manifest.chunks.count, chunkSize: manifest.chunkSize)
        if let recorded = try coordinator.metadata(forKey: ImportMarker.identityKey, as: ImportMarker.Identity.self) {
            guard recorded == identity else {
                var reasons: [String] = []
                if recorded.feedSHA256 != identity.feedSHA256 { reasons.append("the feed differs (\(recorded.feedByteSize) bytes then, \(identity.feedByteSize) now)") }
                if recorded.pipelineSHA256 != identity.pipelineSHA256 { reasons.append("the pipeline differs") }
                if recorded.chunkSize != identity.chunkSize { reasons.append("the chunk size differs (\(recorded.chunkSize) then, \(identity.chunkSize) now)") }
                throw ImportError("\(options.store) is being filled from another import: \(reasons.joined(separator: "; ")); pass --restart to start over")
            }
            return
        }
        let context = ObjectContext(coordinator: coordinator, name: "marker")
        try context.perform {
            try context.setMetadata(identity, forKey: ImportMarker.identityKey)
            try context.setMetadata(ImportMarker.Run(feed: absolute(options.feed), pipeline: options.pipelinePath.map(absolute),
                                                     chunks: absolute(chunksDirectory), saveEvery: options.saveEvery),
                                    forKey: ImportMarker.runKey)
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
        let temporary = rejectsPath + ".tmp"
        try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
        guard Glibc.rename(temporary, rejectsPath) == 0 else {
            throw IOError(errno: errno, operation: "rename", path: temporary)
        }
    }
}

/// The run stopped at a save boundary because it was asked to (SIGINT, SIGTERM).
public struct ImportInterrupted: Error, Sendable {}
