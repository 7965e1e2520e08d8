import Dispatch
import Foundation
import IngestJSON
import Logging
import IngestStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension Importer {
    /// The batch path's writer and row mapper for this run's pipeline, or nil when that
    /// path cannot write it (see `RowMapper`).
    func makeBatchPath(_ coordinator: PersistentStoreCoordinator, spec: PipelineSpec, firstRowOfRun: [String: Int64],
                               keys: ImportMarker.Keys) -> (SQLiteChunkWriter, RowMapper)? {
        let inserter = BatchInserter(coordinator: coordinator, rules: spec.mappings.mapValues(\.onConflict))
        inserter.firstRowOfRun = firstRowOfRun
        guard let rows = RowMapper(mapper: RecordMapper(spec: spec), inserter: inserter) else { return nil }
        if spec.lineage { rows.lineageRun = keys.run }
        return (SQLiteChunkWriter(inserter: inserter, keys: keys), rows)
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

    /// The run this import continues (the store's unfinished run, when it is of this
    /// feed, pipeline and chunk size) or starts (recorded now, before any chunk); and
    /// the number of a run it abandoned, if any.
    @_optimize(none)
    func beginRun(_ coordinator: PersistentStoreCoordinator, spec: PipelineSpec, chunkSize: Int) throws -> (ImportMarker.Run, abandoned: Int?) {
        let runs = try ImportMarker.runs(coordinator)
        for (run, files) in options.removesLeftoverChunks ? Self.removeLeftoverChunks(of: runs) : [] {
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
            // An abandoned replay is never resumed: its files go (the rejects it replayed stay where they were).
            if try ImportMarker.replayLinks(coordinator, run: last.number) != nil {
                Self.removeReplayFiles(feed: last.feed, pipeline: last.pipeline)
            }
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
            chunks: absolute(options.chunks ?? filesBase + ".chunks/run-" + ImportMarker.Keys.pad(number, 4)),
            saveEvery: options.saveEvery, feedByteSize: feedSize, feedChecksum: "", pipelineSHA256: spec.hash, chunkCount: 0,
            chunkSize: chunkSize, state: .running, started: ImportMarker.now(), ended: nil,
            firstRowOfRun: try coordinator.nextRowNumbers())
        var recorded = run
        if options.pipelineInferred { recorded.inferred = true }
        try ImportMarker.save(recorded, coordinator, links: options.replay)
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

    /// Removes the run files of a store in memory, named after `base` in the temporary
    /// directory, when the store goes: its lock, report and rejects, and the chunks of its
    /// runs in `base.chunks` (a run given its own chunks directory keeps it). Only regular
    /// files of those names, and only the split's own files among the chunks.
    static func removeRunFiles(base: String) {
        for suffix in [".lock", ".report.json", ".rejects.ndjson"] where FileOps.isRegularFile(base + suffix) {
            _ = unlink(base + suffix)
        }
        // Directories themselves, not links to one: what a link names is not the store's.
        let chunks = base + ".chunks"
        guard FileOps.isDirectory(chunks) else { return }
        for run in (try? FileManager.default.contentsOfDirectory(atPath: chunks)) ?? []
        where isRunDirectoryName(run) && FileOps.isDirectory(chunks + "/" + run) {
            deleteChunks(chunks + "/" + run)
        }
        _ = rmdir(chunks)
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
        if HTTPByteSource.isURL(path) { return path }
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
        let lines = try ImportMarker.rejectFileLines(coordinator)
        try FileOps.writeAtomically(Array(lines.map { $0 + "\n" }.joined().utf8), to: rejectsPath)
        return lines.count
    }
}
