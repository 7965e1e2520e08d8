import Dispatch
public import Foundation
import IngestJSON
public import Logging
import IngestStore
public import Synchronization
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
        /// Leave the store's unfinished run as it is (its records stay) and import this
        /// feed as a new run.
        public var abandonRun: Bool
        /// Delete the store, and everything imported into it, before importing.
        public var deleteStore: Bool
        /// Import the feed even when the store's last run imported the same feed with the
        /// same pipeline (by default that is refused with `ImportError.alreadyImported`).
        public var again = false
        /// Keep the chunk files of a run that finishes (by default they are deleted).
        public var keepChunks: Bool
        /// Stop (resumably) once more than this many records have been rejected in all.
        public var maxRejects: Int?
        /// Keep the secondary indexes during the import instead of building them at the end.
        public var keepIndexes: Bool
        /// The pipeline file's path, recorded for `ingest resume`.
        public var pipelinePath: String?
        /// Write through managed objects and contexts even where the batch path applies
        /// (it is chosen whenever the pipeline allows: see `RowMapper`).
        public var objectPath = false
        /// The pipeline was inferred from the feed (`PipelineInference`), as the run records.
        public var pipelineInferred = false
        /// Continue the run from its finished split's chunk files without reading the feed
        /// (one read once, from standard input or a pipe). A chunk file that is missing or
        /// changed stops the run with `SplitError.chunksMissing`.
        public var withoutFeed = false
        /// Where the run logs: its stages at `info`; each chunk, save, wait and lookup at
        /// `debug`; each rejected record at `trace`. Default: nowhere.
        public var logger = Logger(label: "ingest.import", factory: { _ in SwiftLogNoOpLogHandler() })

        public init(feed: String, store: String, chunks: String? = nil, workers: Int? = nil, saveEvery: Int? = nil,
                    chunkSize: Int? = nil, abandonRun: Bool = false, deleteStore: Bool = false, keepChunks: Bool = false,
                    maxRejects: Int? = nil, keepIndexes: Bool = false, pipelinePath: String? = nil, pipelineInferred: Bool = false,
                    logger: Logger? = nil) {
            self.feed = feed
            self.store = store
            self.chunks = chunks
            self.workers = workers
            self.saveEvery = saveEvery
            self.chunkSize = chunkSize
            self.abandonRun = abandonRun
            self.deleteStore = deleteStore
            self.keepChunks = keepChunks
            self.maxRejects = maxRejects
            self.keepIndexes = keepIndexes
            self.pipelinePath = pipelinePath
            self.pipelineInferred = pipelineInferred
            if let logger { self.logger = logger }
        }
    }

    /// Set it to stop at the next save boundary; `run()` then throws `ImportInterrupted`.
    /// `cancel()` sets it and also ends the waits where nothing saves.
    public let cancellation = Atomic<Bool>(false)

    /// What `cancel()` stops in a run under way.
    struct ActiveRun: Sendable {
        let state: RunState
        let split: SplitStage
        let queue: ChunkQueue
    }
    let active = Mutex<ActiveRun?>(nil)

    /// Stops the run at its next save boundary (from a signal handler's queue, say), and
    /// at once where nothing saves: a split waiting for input from a pipe (its read ends)
    /// and workers waiting for a chunk (the queue closes). `run()` then throws
    /// `ImportInterrupted`; the run is resumable.
    public func cancel() {
        cancellation.store(true, ordering: .relaxed)
        guard let run = active.withLock({ $0 }) else { return }
        run.state.fail(ImportInterrupted())
        run.split.cancel()
        run.queue.close()
    }

    public let spec: PipelineSpec
    public let options: Options
    /// Tests stop the run after this many saves (in all workers together), as a crash would.
    let stopAfterSaves = Atomic<Int>(Int.max)
    let saves = Atomic<Int>(0)
    private let listeners = ObserverRegistry<ImportProgress>()

    public init(spec: PipelineSpec, options: Options) {
        self.spec = spec
        self.options = options
    }

    public var rejectsPath: String { options.store + ".rejects.ndjson" }
    public var reportPath: String { options.store + ".report.json" }

    /// Calls `handler` with every progress event of `run()` (on the main context's
    /// queue, in order). Keep the token to stop with `removeProgressObserver`.
    @discardableResult
    public func addProgressObserver(_ handler: @escaping @Sendable (ImportProgress) -> Void) -> UUID {
        listeners.add(handler)
    }

    public func removeProgressObserver(_ token: UUID) {
        listeners.remove(token)
    }

    /// The progress events of `run()` as an async sequence; it finishes after the final
    /// event (or when the reading task is cancelled). Ask for it before calling `run()`.
    public func progressEvents() -> AsyncStream<ImportProgress> {
        listeners.stream(finishingAfter: \.isFinal)
    }

    /// Runs the import: continues the store's unfinished run when it is of this feed
    /// and pipeline, else starts a new run (a store takes any number of feeds, one run
    /// each; a finished run never blocks the next).
    /// - Throws: `ImportError` when the feed cannot be read, the store's unfinished run
    ///   is of another feed or pipeline (unless `abandonRun`), or more records were
    ///   rejected than `maxRejects`; `ImportInterrupted` after `cancellation`;
    ///   `FeedError`, `SplitError`, `IOError`, `StoreError` from the stages.
    public func run() throws -> ImportReport {
        try ImportRun.run(SQLiteRunStore(importer: self))
    }

    /// The batch path's writer and row mapper for this run's pipeline, or nil when that
    /// path cannot write it (see `RowMapper`).
    func makeBatchPath(_ coordinator: PersistentStoreCoordinator, firstRowOfRun: [String: Int64],
                               keys: ImportMarker.Keys) -> (SQLiteChunkWriter, RowMapper)? {
        let inserter = BatchInserter(coordinator: coordinator, rules: spec.mappings.mapValues(\.onConflict))
        inserter.firstRowOfRun = firstRowOfRun
        return RowMapper(mapper: RecordMapper(spec: spec), inserter: inserter).map { (SQLiteChunkWriter(inserter: inserter, keys: keys), $0) }
    }

    /// Before a resumed run: pending chunks of a finished split whose bytes no longer
    /// match the manifest (edited, truncated, deleted) are removed, so the splitter makes
    /// them again from the feed; a changed feed makes the splitter stop with the reason.
    /// Returns the file names removed, and the chunks found intact (their workers need
    /// not hash them again).
    static func removeChangedChunks(_ chunksDirectory: String, done: [Int: Int]) throws -> (removed: [String], verified: Set<Int>) {
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

    func publish(_ event: ImportProgress) {
        listeners.post(event)
    }

    /// The run this import continues (the store's unfinished run, when it is of this
    /// feed, pipeline and chunk size) or starts (recorded now, before any chunk); and
    /// the number of a run it abandoned, if any.
    func beginRun(_ coordinator: PersistentStoreCoordinator, chunkSize: Int) throws -> (ImportMarker.Run, abandoned: Int?) {
        let runs = try ImportMarker.runs(coordinator)
        for (run, files) in Self.removeLeftoverChunks(of: runs) {
            options.logger.notice("removed chunk files a finished run left behind", metadata: ["run": "\(run)", "files": "\(files)"])
        }
        let feedSize = options.withoutFeed || FileOps.isReadOnce(options.feed) ? -1 : FileOps.fileSize(options.feed) ?? -1
        var abandoned: Int?
        let admission = RunAdmission(feed: options.feed, feedSize: feedSize, pipelineSHA256: spec.hash,
                                     keylessEntities: spec.keylessEntities, chunkSize: chunkSize, again: options.again)
        if let last = runs.last, last.state == .finished { try admission.checkNotImported(last.admitted, store: options.store) }
        if var last = runs.last, last.state == .running {
            let chunks = options.chunks ?? last.chunks
            // A finished split's manifest makes the split compare the feed's checksum itself.
            let reasons = try admission.reasons(continuing: last.admitted,
                                                splitWillCompare: SplitManifest.isFinished(chunks))
            if reasons.isEmpty && !options.abandonRun {
                last.chunks = chunks
                return (last, nil)
            }
            guard options.abandonRun else { throw unfinished(last, reasons) }
            last.state = .abandoned
            last.ended = ImportMarker.now()
            try ImportMarker.save(last, coordinator)
            abandoned = last.number
        }
        // Found by probing: chunks split in another size were found out only after the run
        // was recorded, leaving a run no resume could finish. Refused before anything is recorded.
        if let directory = options.chunks, let manifest = try? SplitManifest.load(fromDirectory: directory), manifest.chunkSize != chunkSize {
            throw ImportError("\(directory) was split in chunks of \(manifest.chunkSize) record\(manifest.chunkSize == 1 ? "" : "s"), and this import asks for \(chunkSize): pass --chunk-size \(manifest.chunkSize) to import those chunks, or --chunks with another directory")
        }
        // Nor is a new run recorded over a directory holding another feed's split, or chunks of no split.
        if let directory = options.chunks {
            var split = SplitOptions(feed: spec.feedOptions, chunkSize: chunkSize, form: spec.recordForm)
            split.withoutFeed = options.withoutFeed
            try Splitter(feedPath: options.feed, directory: directory, options: split).checkDirectory()
        }
        let number = (runs.last?.number ?? 0) + 1
        let run = ImportMarker.Run(
            number: number, feed: options.feed == "-" ? "-" : absolute(options.feed), pipeline: options.pipelinePath.map(absolute),
            chunks: absolute(options.chunks ?? options.store + ".chunks/run-" + ImportMarker.Keys.pad(number, 4)),
            saveEvery: options.saveEvery, feedByteSize: feedSize, feedChecksum: "", pipelineSHA256: spec.hash, chunkCount: 0,
            chunkSize: chunkSize, state: .running, started: ImportMarker.now(), ended: nil,
            firstRowOfRun: try coordinator.nextRowNumbers())
        var recorded = run
        if options.pipelineInferred { recorded.inferred = true }
        try ImportMarker.save(recorded, coordinator)
        return (recorded, abandoned)
    }

    /// The store's unfinished run blocks an import of another feed or pipeline.
    func unfinished(_ run: ImportMarker.Run, _ reasons: [String]) -> ImportError {
        ImportError(.unfinishedRun(store: options.store, run: run.number, feed: run.feed, reasons: reasons))
    }

    /// Removes the chunk files that finished runs which do not keep them left behind (a
    /// process killed while it deleted them; found by probing: 106 MB stayed for good);
    /// returns each such run's number and how many files went.
    static func removeLeftoverChunks(of runs: [ImportMarker.Run]) -> [(run: Int, files: Int)] {
        runs.filter { $0.state == .finished && $0.keptChunks == false && FileManager.default.fileExists(atPath: $0.chunks) }
            .map { ($0.number, deleteChunks($0.chunks)) }.filter { $0.files > 0 }
    }

    /// `removeLeftoverChunks` for the store at `store`, when nothing else is importing into it.
    /// - Throws: what opening the store throws.
    public static func removeLeftoverChunks(store: String) throws -> [(run: Int, files: Int)] {
        let coordinator = try PersistentStoreCoordinator(existingStoreAt: store)
        return removeLeftoverChunks(of: try ImportMarker.runs(coordinator))
    }

    /// Removes a finished run's chunk files (and the directory, once empty); returns
    /// how many files went.
    @discardableResult
    static func deleteChunks(_ directory: String) -> Int {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var removed = 0
        // Only regular files of the split's own names (and its lock): a link of such a name,
        // or any other file, is the user's and keeps the directory with it.
        for file in files where Splitter.isSplitFile(file) || file == ChunkDirectoryLock.fileName {
            if FileOps.isRegularFile(directory + "/" + file), unlink(directory + "/" + file) == 0,
               MemberEnds.index(inFileName: file) == nil, file != ChunkDirectoryLock.fileName {
                // Member ends go with their chunks, uncounted: they are the run's aside, not its chunks.
                removed += 1
            }
        }
        if (try? FileManager.default.contentsOfDirectory(atPath: directory))?.isEmpty == true {
            _ = rmdir(directory)
            // The default parent, STORE.chunks, goes too when no run keeps chunks in it.
            let parent = (directory as NSString).deletingLastPathComponent
            if parent.hasSuffix(".chunks") { _ = rmdir(parent) }
        }
        return removed
    }

    /// Removes the chunks' member ends from a directory whose chunks are kept: only the run
    /// whose split wrote them reads them.
    static func deleteMemberEnds(_ directory: String) {
        for file in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        where MemberEnds.index(inFileName: file) != nil && FileOps.isRegularFile(directory + "/" + file) {
            _ = unlink(directory + "/" + file)
        }
    }

    /// `path` from the root, without `.` and `..` components or doubled slashes (status
    /// prints it; links are left as they are, as the user named them).
    static func absolute(_ path: String) -> String {
        let full = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return URL(fileURLWithPath: full).standardized.path
    }

    private func absolute(_ path: String) -> String { Self.absolute(path) }

    /// Whether `name` is a run's directory in STORE.chunks (`run-0001`).
    static func isRunDirectoryName(_ name: String) -> Bool {
        name.count >= 8 && name.hasPrefix("run-") && name.dropFirst(4).allSatisfy(\.isNumber)
    }

    /// Writes every run's rejects to the rejects file, oldest run first; returns how many.
    @discardableResult
    func writeRejects(_ coordinator: PersistentStoreCoordinator) throws -> Int {
        var count = 0
        var text = ""
        for run in try ImportMarker.runs(coordinator) {
            for reject in try ImportMarker.rejects(coordinator, ImportMarker.Keys(run: run.number)) {
                let line = JSONValue.object([
                    JSONMember("run", .number(String(run.number))),
                    JSONMember("chunk", .number(String(reject.chunk))), JSONMember("index", .number(String(reject.index))),
                    JSONMember("record", .number(String(reject.record))), JSONMember("reason", .string(reject.reason)),
                    JSONMember("text", .string(reject.text)),
                ])
                text += line.description + "\n"
                count += 1
            }
        }
        try FileOps.writeAtomically(Array(text.utf8), to: rejectsPath)
        return count
    }
}

/// The run stopped at a save boundary because it was asked to (SIGINT, SIGTERM).
public struct ImportInterrupted: Error, Sendable {}
