import Foundation
import IngestJSON
import IngestStore

/// An import's records in store metadata. Every import into a store is a *run*,
/// numbered from 1: the run's record (`ingest.runs.NNNN`: feed, pipeline, chunks,
/// state) and, under `ingest.run.NNNN.`, its marker (per chunk, how many of its records
/// are done) and its rejects. Each worker's save writes its chunk's count in the same
/// transaction as the rows it covers, so after a crash the marker says exactly what
/// the store holds.
enum ImportMarker {
    static let runsPrefix = "ingest.runs."

    /// One import run, as the store records it.
    struct Run: Codable, Equatable {
        enum State: String, Codable {
            case running, finished, abandoned
        }

        var number: Int
        /// Where the run's inputs are, for `ingest resume` (informative: moving them is allowed).
        /// "-" for standard input.
        var feed: String
        var pipeline: String?
        var chunks: String
        var saveEvery: Int?
        var feedByteSize: Int
        /// The feed's XXH64, known when its split has finished ("" before).
        var feedChecksum: String
        var pipelineSHA256: String
        /// Chunks in the feed, known when its split has finished (0 before).
        var chunkCount: Int
        var chunkSize: Int
        var state: State
        var started: String
        var ended: String?
        /// Each entity's first row number made by this run.
        var firstRowOfRun: [String: Int64]
        /// The pipeline was inferred from the feed, not written by a user.
        var inferred: Bool?
        /// What the run's records did to the store (counted by the process that finished it).
        var outcomes: RecordOutcomes?
        /// Whether the finished run keeps its chunk files (`--keep-chunks`); nil in runs
        /// recorded before this was kept. A process killed while it deleted them leaves
        /// some behind: the next import or resume removes them (`Importer.removeLeftoverChunks`).
        var keptChunks: Bool?
        /// The run stopped at a malformed part of its feed (after importing every chunk
        /// before it): resuming meets it again, so status advises fixing the feed instead.
        var feedError: String?

        /// The run in the terms of `RunAdmission`.
        var admitted: RunAdmission.Recorded {
            RunAdmission.Recorded(number: number, feedByteSize: feedByteSize, feedChecksum: feedChecksum,
                                  pipelineSHA256: pipelineSHA256, chunkSize: chunkSize)
        }
    }

    /// The metadata keys of run `run`.
    struct Keys: Sendable {
        let run: Int
        var record: String { ImportMarker.runsPrefix + Self.pad(run, 4) }
        var prefix: String { "ingest.run.\(Self.pad(run, 4))." }
        var chunkPrefix: String { prefix + "chunk." }
        var rejectPrefix: String { prefix + "reject." }
        /// Each saved chunk's checksum, beside its count: a resumed run whose feed comes out
        /// different in a chunk already imported stops instead of mixing two feeds.
        var sumPrefix: String { prefix + "sum." }

        /// Per save: the census of the members its records held that the pipeline does not map.
        var membersPrefix: String { prefix + "members." }
        /// Per save: what became of its records' own objects (inserted, updated, unchanged),
        /// so that a run stopped and resumed counts every save, not the last process's.
        var outcomesPrefix: String { prefix + "outcomes." }

        func chunkKey(_ chunk: Int) -> String { chunkPrefix + ChunkInfo.fileName(for: chunk) }

        /// The save of `chunk` that brought its marker to `done` (one key per save, so a
        /// save made again after a crash replaces its own census and adds no other).
        func membersKey(chunk: Int, done: Int) -> String { membersPrefix + ChunkInfo.fileName(for: chunk) + "." + Self.pad(done, 9) }

        func outcomesKey(chunk: Int, done: Int) -> String { outcomesPrefix + ChunkInfo.fileName(for: chunk) + "." + Self.pad(done, 9) }

        func sumKey(_ chunk: Int) -> String { sumPrefix + ChunkInfo.fileName(for: chunk) }

        func rejectKey(chunk: Int, index: Int) -> String {
            rejectPrefix + ChunkInfo.fileName(for: chunk) + "." + Self.pad(index, 6)
        }

        static func pad(_ number: Int, _ width: Int) -> String {
            String(repeating: "0", count: max(0, width - String(number).count)) + String(number)
        }
    }

    /// A rejected record, kept in the store until the rejects file is written.
    struct Reject: Codable, Equatable {
        var chunk: Int
        var index: Int
        var record: Int
        var reason: String
        var text: String

        /// Record `index` of `chunk`, rejected for `reason`.
        init(_ chunk: ChunkInfo, index: Int, reason: String, text: String) {
            self.chunk = chunk.index
            self.index = index
            record = chunk.firstRecord + index
            self.reason = reason
            self.text = text
        }

        /// The reject as a line of the rejects file: the run first, the keys in reading order.
        func fileLine(run: Int) -> String { rejectFileLine(run: run, self, origin: nil) }

        /// The reject as one line of JSON, keys sorted: as a SQLite store's metadata and a
        /// PostgreSQL store's `_ingest_rejects` keep it. (The rejects file is written by
        /// `Importer.writeRejects`, with the run first and the keys in reading order.)
        func jsonLine() throws -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return String(decoding: try encoder.encode(self), as: UTF8.self)
        }
    }

    /// Every run the store records, oldest first (a store filled by an earlier version
    /// has its one import renamed to run 1 first).
    static func runs(_ coordinator: PersistentStoreCoordinator) throws -> [Run] {
        try migrateSingleImport(coordinator)
        let decoder = JSONDecoder()
        return try coordinator.metadata(withPrefix: runsPrefix).sorted { $0.key < $1.key }.map { entry in
            func damaged(_ reason: String) -> ImportError {
                ImportError("\(coordinator.path): the store's record of an import (\(entry.key) in \(PersistentStoreCoordinator.metadataTableName)) is damaged: \(reason); it is not what Ingest wrote")
            }
            let run: Run
            do {
                run = try decoder.decode(Run.self, from: Data(entry.value.utf8))
            } catch let error as DecodingError {
                throw damaged(error.plainDescription)
            }
            // The key names the run: a record of another number (or none a run can have) was edited.
            guard Int(entry.key.dropFirst(runsPrefix.count)) == run.number, run.number >= 1, run.number < Int.max else {
                throw damaged("it holds run \(run.number)")
            }
            return run
        }
    }

    /// Records done per chunk of run `keys.run`, from the store.
    static func progress(_ coordinator: PersistentStoreCoordinator, _ keys: Keys) throws -> [Int: Int] {
        var done: [Int: Int] = [:]
        for (key, value) in try coordinator.metadata(withPrefix: keys.chunkPrefix) {
            guard let chunk = ChunkInfo.index(inFileName: String(key.dropFirst(keys.chunkPrefix.count))),
                  let count = Int(value) else { continue }
            done[chunk] = count
        }
        return done
    }

    /// The checksum of each chunk of run `keys.run` that a save wrote records of (chunks
    /// saved by versions that did not keep them have none).
    static func sums(_ coordinator: PersistentStoreCoordinator, _ keys: Keys) throws -> [Int: String] {
        var sums: [Int: String] = [:]
        for (key, value) in try coordinator.metadata(withPrefix: keys.sumPrefix) {
            guard let chunk = ChunkInfo.index(inFileName: String(key.dropFirst(keys.sumPrefix.count))) else { continue }
            // The object path keeps metadata as JSON (a quoted string); the batch path as it is.
            sums[chunk] = value.hasPrefix("\"") ? String(value.dropFirst().dropLast()) : value
        }
        return sums
    }

    static func rejects(_ coordinator: PersistentStoreCoordinator, _ keys: Keys) throws -> [Reject] {
        let decoder = JSONDecoder()
        return try coordinator.metadata(withPrefix: keys.rejectPrefix).sorted { $0.key < $1.key }.map { entry in
            do {
                return try decoder.decode(Reject.self, from: Data(entry.value.utf8))
            } catch let error as DecodingError {
                throw ImportError("\(coordinator.path): the store's record of a reject (\(entry.key) in \(PersistentStoreCoordinator.metadataTableName)) is damaged: \(error.plainDescription); it is not what Ingest wrote")
            }
        }
    }

    /// The census of every save of run `keys.run`: the members its records held that the
    /// pipeline does not map.
    static func members(_ coordinator: PersistentStoreCoordinator, _ keys: Keys) throws -> MemberCensus {
        try total(coordinator, prefix: keys.membersPrefix, what: "unmapped members", from: MemberCensus(), +)
    }

    /// The outcomes of every save of run `keys.run`, added up.
    static func outcomes(_ coordinator: PersistentStoreCoordinator, _ keys: Keys) throws -> RecordOutcomes {
        try total(coordinator, prefix: keys.outcomesPrefix, what: "a save's outcomes", from: RecordOutcomes(), +)
    }

    /// What the saves kept under `prefix` add up to, each read as JSON.
    private static func total<Part: Decodable>(_ coordinator: PersistentStoreCoordinator, prefix: String, what: String, from zero: Part,
                                               _ add: (Part, Part) -> Part) throws -> Part {
        let decoder = JSONDecoder()
        return try coordinator.metadata(withPrefix: prefix).reduce(zero) { total, entry in
            do {
                return add(total, try decoder.decode(Part.self, from: Data(entry.value.utf8)))
            } catch let error as DecodingError {
                throw ImportError("\(coordinator.path): the store's record of \(what) (\(entry.key) in \(PersistentStoreCoordinator.metadataTableName)) is damaged: \(error.plainDescription); it is not what Ingest wrote")
            }
        }
    }

    /// A census, or a save's outcomes, as one line of JSON, keys sorted (as `setMetadata` writes them).
    static func jsonLine(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Writes `run`'s record in a transaction of its own (with, for a replay's new run, the
    /// links of its records).
    static func save(_ run: Run, _ coordinator: PersistentStoreCoordinator, links: [Replay.Link]? = nil) throws {
        let context = ObjectContext(coordinator: coordinator, name: "marker")
        try context.performAndWait {
            try context.setMetadata(run, forKey: Keys(run: run.number).record)
            if let links { try context.setMetadata(links, forKey: Replay.linksKey(run: run.number)) }
            try context.save()
        }
    }

    /// Writes a finished run's record; a replay's run (`links`: its records' links) also
    /// removes, in the same transaction, the rejects it replayed (each record is imported
    /// now, or a reject of this run).
    static func finish(_ run: Run, _ coordinator: PersistentStoreCoordinator, replaying links: [Replay.Link]?) throws {
        let replaced = (links ?? []).map { Keys(run: $0.source.run).rejectKey(chunk: $0.source.chunk, index: $0.source.index) }
        try coordinator.updateMetadata(setting: [Keys(run: run.number).record: try jsonLine(run)], removing: replaced)
    }

    /// The links of run `run`'s records when it replays rejects (nil: it does not).
    static func replayLinks(_ coordinator: PersistentStoreCoordinator, run: Int) throws -> [Replay.Link]? {
        guard let text = try coordinator.metadata(forKey: Replay.linksKey(run: run)) else { return nil }
        do {
            return try JSONDecoder().decode([Replay.Link].self, from: Data(text.utf8))
        } catch let error as DecodingError {
            throw ImportError("\(coordinator.path): the store's record of run \(run)'s replayed rejects (\(Replay.linksKey(run: run)) in \(PersistentStoreCoordinator.metadataTableName)) is damaged: \(error.plainDescription); it is not what Ingest wrote")
        }
    }

    /// Every run's rejects as the rejects file's lines, oldest run first; a reject of a
    /// replay names where its record first came from.
    static func rejectFileLines(_ coordinator: PersistentStoreCoordinator) throws -> [String] {
        var lines: [String] = []
        for run in try runs(coordinator) {
            let links = try replayLinks(coordinator, run: run.number) ?? []
            for reject in try rejects(coordinator, Keys(run: run.number)) {
                lines.append(rejectFileLine(run: run.number, reject, origin: links.origin(of: reject.record)))
            }
        }
        return lines
    }

    /// The time now as ISO 8601 in UTC (`2026-11-25T12:00:00Z`). FoundationEssentials'
    /// format style, not `ISO8601DateFormatter`: that one opens an ICU date formatter, whose
    /// locale data cost every import 4 MB of resident memory for one timestamp.
    static func now() -> String { Date.ISO8601FormatStyle().format(Date()) }

    // MARK: - Stores written before runs

    private struct SingleImport: Codable {
        var feedByteSize: Int
        var feedChecksum: String?
        var pipelineSHA256: String
        var chunks: Int
        var chunkSize: Int
    }

    private struct SingleImportPaths: Codable {
        var feed: String
        var pipeline: String?
        var chunks: String
        var saveEvery: Int?
    }

    /// A store that one import filled before imports had runs keeps `ingest.import`,
    /// `ingest.run`, `ingest.chunk.*` and `ingest.reject.*`: they become run 1.
    @_optimize(none)
    private static func migrateSingleImport(_ coordinator: PersistentStoreCoordinator) throws {
        guard let old = try coordinator.metadata(forKey: "ingest.import", as: SingleImport.self) else { return }
        // A reader meets such a store once: the renaming is done by a writer of its own.
        if coordinator.isReadOnly { return try migrateSingleImport(PersistentStoreCoordinator(existingStoreAt: coordinator.path)) }
        let paths = try coordinator.metadata(forKey: "ingest.run", as: SingleImportPaths.self)
        let keys = Keys(run: 1)
        try coordinator.renameMetadata(withPrefix: "ingest.chunk.") { keys.chunkPrefix + $0.dropFirst("ingest.chunk.".count) }
        try coordinator.renameMetadata(withPrefix: "ingest.reject.") { keys.rejectPrefix + $0.dropFirst("ingest.reject.".count) }
        let done = try progress(coordinator, keys)
        let chunkRecords = paths.flatMap { try? SplitManifest.load(fromDirectory: $0.chunks) }
            .map { Dictionary(uniqueKeysWithValues: $0.chunks.map { ($0.index, $0.records) }) } ?? [:]
        // Without the manifest the last chunk's size is unknown: an import that ended also
        // built its deferred indexes, so none still deferred tells a finished one.
        let indexesDeferred = try coordinator.secondaryIndexesDeferred()
        let finished = old.chunks > 0 && (1...old.chunks).allSatisfy { chunk in
            let done = done[chunk] ?? 0
            if let records = chunkRecords[chunk] { return done >= records }
            return chunk == old.chunks ? done > 0 : done >= old.chunkSize
        } && (chunkRecords.isEmpty ? !indexesDeferred : true)
        let run = Run(number: 1, feed: paths?.feed ?? "?", pipeline: paths?.pipeline, chunks: paths?.chunks ?? "?",
                      saveEvery: paths?.saveEvery, feedByteSize: old.feedByteSize, feedChecksum: old.feedChecksum ?? "",
                      pipelineSHA256: old.pipelineSHA256, chunkCount: old.chunks, chunkSize: old.chunkSize,
                      state: finished ? .finished : .running, started: "", ended: nil, firstRowOfRun: [:])
        try save(run, coordinator)
        try coordinator.renameMetadata(withPrefix: "ingest.import") { $0 == "ingest.import" ? "ingest.legacy.import" : nil }
        try coordinator.renameMetadata(withPrefix: "ingest.run") { $0 == "ingest.run" ? "ingest.legacy.run" : nil }
    }
}
