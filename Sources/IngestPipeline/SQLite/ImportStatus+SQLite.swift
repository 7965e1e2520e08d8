import Foundation
import IngestJSON
import IngestStore

/// The status of a SQLite store, read from its metadata.
extension ImportStatus {
    /// The status of the SQLite store at `store`.
    @_optimize(none)
    static func readSQLite(store: String) throws -> ImportStatus {
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
            // A feed over HTTP is recorded without a size too, and is read again from its address.
            runs[runs.count - 1].feedWasReadOnce = record.feedByteSize < 0 && !HTTPByteSource.isURL(record.feed)
            runs[runs.count - 1].feedError = record.feedError
            runs[runs.count - 1].replayed = try ImportMarker.replayLinks(coordinator, run: record.number).map(Run.Replayed.init)
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
        return ImportStatus(store: store, runs: runs, counts: counts, finished: latest.state != .running,
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
    @_optimize(none)
    static func checkSQLite(store: String) throws -> [String] {
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

