import Foundation
public import IngestJSON
import IngestStore

/// Where the imports into a store stand, read from the store alone (works while an
/// import runs: readers never wait for its writer). The top-level fields describe the
/// latest run; `runs` lists them all.
public struct ImportStatus: Sendable {
    /// One import run into the store.
    public struct Run: Sendable {
        public var number: Int
        /// "running" (unfinished: stopped, or still going), "finished" or "abandoned".
        public var state: String
        public var feed: String
        public var pipeline: String?
        public var chunks: String
        /// Read once (standard input, a pipe, process substitution): recorded without a size.
        public var feedWasReadOnce = false
        /// The run stopped at a malformed part of its feed, after importing every chunk
        /// before it (`FeedError`'s description): a resume would stop there again.
        public var feedError: String?
        /// Chunks in the feed; nil while the split has not finished.
        public var chunkCount: Int?
        public var chunkSize: Int
        public var saveEvery: Int?
        public var chunksComplete: Int
        public var recordsDone: Int
        public var rejected: Int
        public var started: String
        public var ended: String?
        public var inferred: Bool
        public var outcomes: RecordOutcomes?
        /// The members the run's records held that its pipeline does not map, so far.
        public var members = MemberCensus()
        /// For an unfinished run: whether a process imports it now.
        public var activity: Activity?
    }

    /// Who imports an unfinished run now, as the store's import lock says.
    public enum Activity: Sendable, Equatable {
        /// A live process holds the lock.
        case importing(pid: Int32, host: String, since: String)
        /// The process holding the lock is stopped (SIGSTOP, a debugger): SIGCONT continues it.
        case suspended(pid: Int32, host: String)
        /// No process imports it: it was killed, stopped by a signal or failed; `ingest resume` continues it.
        case interrupted
    }

    public var runs: [Run]
    public var counts: [String: Int]
    public var finished: Bool
    /// The secondary indexes are dropped until the import finishes (reads work, slower).
    public var indexesDeferred: Bool

    /// The latest run (a store has at least one when its status can be read).
    public var latest: Run { runs[runs.count - 1] }
    public var feed: String? { latest.feed }
    public var pipeline: String? { latest.pipeline }
    public var chunks: String? { latest.chunks }
    /// Chunks in the latest run's feed; nil while its split has not finished.
    public var chunkCount: Int? { latest.chunkCount }
    /// Records per chunk and per save, as the latest run was started with.
    public var chunkSize: Int { latest.chunkSize }
    public var saveEvery: Int? { latest.saveEvery }
    public var chunksComplete: Int { latest.chunksComplete }
    public var recordsDone: Int { latest.recordsDone }
    public var rejected: Int { latest.rejected }

    /// The latest run that is not finished, if any: what `ingest resume` continues.
    public var unfinishedRun: Run? { runs.last.flatMap { $0.state == "running" ? $0 : nil } }

    /// - Throws: `StoreError` for a file that is not an Ingest store; `ImportError` for a
    ///   store that no import has written to.
    public static func read(store: String) throws -> ImportStatus {
        let coordinator = try PersistentStoreCoordinator(existingStoreAt: store, readOnly: true)
        let records = try ImportMarker.runs(coordinator)
        guard let latest = records.last else {
            throw ImportError(.noImport(store: store))
        }
        var runs: [Run] = []
        for record in records {
            let keys = ImportMarker.Keys(run: record.number)
            let progress = try ImportMarker.progress(coordinator, keys)
            // A chunk is complete when its count reaches the manifest's; without the manifest
            // at hand (deleted when the run finished), every chunk but the last holds chunkSize records.
            let manifestChunks = chunkRecords(record.chunks)
            var complete = 0
            for (chunk, done) in progress where done >= (manifestChunks[chunk] ?? record.chunkSize) { complete += 1 }
            if record.state == .finished { complete = record.chunkCount }
            let chunkCount: Int? = record.chunkCount > 0 ? record.chunkCount : (manifestChunks.isEmpty ? nil : manifestChunks.count)
            runs.append(Run(number: record.number, state: record.state.rawValue, feed: record.feed, pipeline: record.pipeline,
                            chunks: record.chunks, chunkCount: chunkCount, chunkSize: record.chunkSize, saveEvery: record.saveEvery,
                            chunksComplete: complete, recordsDone: progress.values.reduce(0, +),
                            rejected: try coordinator.metadata(withPrefix: keys.rejectPrefix).count,
                            started: record.started, ended: record.ended, inferred: record.inferred ?? false,
                            outcomes: try Self.outcomes(of: record, coordinator, keys),
                            members: try ImportMarker.members(coordinator, keys)))
            runs[runs.count - 1].feedWasReadOnce = record.feedByteSize < 0
            runs[runs.count - 1].feedError = record.feedError
        }
        if runs[runs.count - 1].state == "running" {
            runs[runs.count - 1].activity = switch ImportLock.liveHolder(store: store) {
            case let (holder, stopped)? where stopped: .suspended(pid: holder.pid, host: holder.host)
            case let (holder, _)?: .importing(pid: holder.pid, host: holder.host, since: holder.startedAt)
            case nil: .interrupted
            }
        }
        var counts: [String: Int] = [:]
        for entity in coordinator.model.entities { counts[entity.name] = try coordinator.count(entity.name) }
        return ImportStatus(runs: runs, counts: counts, finished: latest.state != .running,
                            indexesDeferred: try coordinator.secondaryIndexesDeferred())
    }

    /// Records per chunk from the manifest where the store says the chunks are (empty
    /// when they moved or were deleted, or the split has not finished: status reads what it can).
    private static func chunkRecords(_ directory: String) -> [Int: Int] {
        guard let manifest = try? SplitManifest.load(fromDirectory: directory) else { return [:] }
        return Dictionary(uniqueKeysWithValues: manifest.chunks.map { ($0.index, $0.records) })
    }

    /// Checks a store: SQLite's integrity check and Ingest's own (to-ones point at rows,
    /// uniqueness holds), then each run's marker: no chunk done past its records or past
    /// the feed's chunks, rejects only where records are done. (Rows are not compared
    /// with records: a record may make several objects of its own entity, and a later
    /// record or feed may update one instead of adding it.) Works during an import.
    /// - Returns: the problems found; empty for a sound store.
    /// - Throws: `StoreError` for a file that is not an Ingest store.
    public static func check(store: String) throws -> [String] {
        let coordinator = try PersistentStoreCoordinator(existingStoreAt: store, readOnly: true)
        var problems = try coordinator.integrityProblems()
        for run in try ImportMarker.runs(coordinator) {
            let keys = ImportMarker.Keys(run: run.number)
            let place = "run \(run.number) marker"
            // Rejects first, then the marker: an import committing between the two reads only adds records done.
            let rejects = try ImportMarker.rejects(coordinator, keys)
            let progress = try ImportMarker.progress(coordinator, keys)
            let chunkRecords = chunkRecords(run.chunks)
            for (chunk, done) in progress.sorted(by: { $0.key < $1.key }) {
                let limit = chunkRecords[chunk] ?? run.chunkSize
                if done > limit || done < 0 {
                    problems.append("\(place): \(ChunkInfo.fileName(for: chunk)) says \(done) records done, but it holds \(limit)")
                }
                if run.chunkCount > 0 && chunk > run.chunkCount {
                    problems.append("\(place): \(ChunkInfo.fileName(for: chunk)) is past the feed's \(run.chunkCount) chunks")
                }
            }
            for reject in rejects where reject.index >= progress[reject.chunk] ?? 0 {
                problems.append("\(place): a reject at \(ChunkInfo.fileName(for: reject.chunk)) index \(reject.index) lies past the records done there")
            }
        }
        return problems
    }
}

extension ImportStatus {
    /// What the run did with its records so far: every save's outcomes added up; a run
    /// finished before saves kept theirs has only its record's.
    static func outcomes(of record: ImportMarker.Run, _ coordinator: PersistentStoreCoordinator,
                         _ keys: ImportMarker.Keys) throws -> RecordOutcomes? {
        let saved = try ImportMarker.outcomes(coordinator, keys)
        return saved.isEmpty ? record.outcomes : saved
    }
}

