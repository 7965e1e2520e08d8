import Foundation
import IngestJSON
import IngestStore

/// Where an import into a store stands, read from the store alone (works while the
/// import runs: readers never wait for its writer).
public struct ImportStatus: Sendable {
    public var feed: String?
    public var pipeline: String?
    public var chunks: String?
    /// Chunks in the feed; nil while the first split has not finished.
    public var chunkCount: Int?
    /// Records per chunk and per save, as the import was started with.
    public var chunkSize: Int
    public var saveEvery: Int?
    public var chunksComplete: Int
    public var recordsDone: Int
    public var rejected: Int
    public var counts: [String: Int]
    public var finished: Bool
    /// The secondary indexes are dropped until the import finishes (reads work, slower).
    public var indexesDeferred: Bool

    /// - Throws: `StoreError` for a file that is not an Ingest store; `ImportError` for a
    ///   store that no import has written to.
    public static func read(store: String) throws -> ImportStatus {
        let coordinator = try PersistentStoreCoordinator(existingStoreAt: store)
        guard let identity = try coordinator.metadata(forKey: ImportMarker.identityKey, as: ImportMarker.Identity.self) else {
            throw ImportError("\(store) is an Ingest store, but no import has written to it")
        }
        let run = try coordinator.metadata(forKey: ImportMarker.runKey, as: ImportMarker.Run.self)
        let progress = try ImportMarker.progress(coordinator)
        var counts: [String: Int] = [:]
        for entity in coordinator.model.entities { counts[entity.name] = try coordinator.count(entity.name) }
        // A chunk is complete when its count reaches the manifest's; without the manifest
        // at hand, every chunk but the last holds chunkSize records.
        var complete = 0
        let manifestChunks = chunkRecords(run)
        for (chunk, done) in progress where done >= (manifestChunks[chunk] ?? identity.chunkSize) { complete += 1 }
        let rejected = try coordinator.metadata(withPrefix: ImportMarker.rejectPrefix).count
        // The store learns the chunk count when the split finishes; the manifest may know it first.
        let chunkCount: Int? = identity.chunks > 0 ? identity.chunks : (manifestChunks.isEmpty ? nil : manifestChunks.count)
        return ImportStatus(feed: run?.feed, pipeline: run?.pipeline, chunks: run?.chunks, chunkCount: chunkCount,
                            chunkSize: identity.chunkSize, saveEvery: run?.saveEvery,
                            chunksComplete: complete, recordsDone: progress.values.reduce(0, +), rejected: rejected,
                            counts: counts, finished: chunkCount.map { complete == $0 } ?? false,
                            indexesDeferred: try coordinator.secondaryIndexesDeferred())
    }

    /// Records per chunk from the manifest where the store says its chunks are (empty
    /// when they moved, or the split has not finished: status reads what it can).
    private static func chunkRecords(_ run: ImportMarker.Run?) -> [Int: Int] {
        guard let directory = run?.chunks, let manifest = try? SplitManifest.load(fromDirectory: directory) else { return [:] }
        return Dictionary(uniqueKeysWithValues: manifest.chunks.map { ($0.index, $0.records) })
    }

    /// Checks a store: SQLite's integrity check and Ingest's own (to-ones point at rows,
    /// uniqueness holds), then the marker against the store: no chunk done past its
    /// records, rejects only where records are done, no more record-entity rows than
    /// records committed less rejects. Works during an import (it only reads).
    /// - Returns: the problems found; empty for a sound store.
    /// - Throws: `StoreError` for a file that is not an Ingest store.
    public static func check(store: String) throws -> [String] {
        let coordinator = try PersistentStoreCoordinator(existingStoreAt: store)
        var problems = try coordinator.integrityProblems()
        guard let identity = try coordinator.metadata(forKey: ImportMarker.identityKey, as: ImportMarker.Identity.self) else {
            return problems
        }
        let run = try coordinator.metadata(forKey: ImportMarker.runKey, as: ImportMarker.Run.self)
        let spec = run?.pipeline.flatMap { try? PipelineSpec.load(path: $0) }
        // Each read is its own snapshot, and an import may commit between them: rows first,
        // then rejects, then the marker, so that what was read later only adds records done.
        let rows = try spec.map { try coordinator.count($0.recordEntity) }
        let rejects = try ImportMarker.rejects(coordinator)
        let progress = try ImportMarker.progress(coordinator)
        let chunkRecords = chunkRecords(run)
        for (chunk, done) in progress.sorted(by: { $0.key < $1.key }) {
            let limit = chunkRecords[chunk] ?? identity.chunkSize
            if done > limit || done < 0 {
                problems.append("marker: \(ChunkInfo.fileName(for: chunk)) says \(done) records done, but it holds \(limit)")
            }
            if identity.chunks > 0 && chunk > identity.chunks {
                problems.append("marker: \(ChunkInfo.fileName(for: chunk)) is past the feed's \(identity.chunks) chunks")
            }
        }
        for reject in rejects where reject.index >= progress[reject.chunk] ?? 0 {
            problems.append("marker: a reject at \(ChunkInfo.fileName(for: reject.chunk)) index \(reject.index) lies past the records done there")
        }
        if let spec, let rows {
            let committed = progress.values.reduce(0, +) - rejects.count
            if rows > committed {
                problems.append("marker: \(spec.recordEntity) has \(rows) rows, more than the \(committed) records the marker says were imported")
            }
        }
        return problems
    }
}
