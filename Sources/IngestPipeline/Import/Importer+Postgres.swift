import Foundation
import IngestJSON
import IngestStore
import Synchronization

/// What `Importer.run()` composes on a PostgreSQL store: register the run (or find the
/// unfinished run of the same feed and pipeline), split its feed beside this process's
/// workers, import chunks as one of the run's processes, and say what this process did.
extension Importer {
    /// Where a PostgreSQL import stands once its run is registered or found, before any chunk
    /// is imported (the command line says so, and starts its progress line).
    package struct PostgresStart: Sendable {
        /// The run this process imports.
        package var run: Int?
        /// False when the store's unfinished run of this feed and pipeline was found instead
        /// (always false when joining).
        package var registered: Bool
    }

    /// `run()` on a PostgreSQL store, telling `started` when the run is registered or found;
    /// returns the report and, apart, why the split beside the workers failed (the workers
    /// stopped at their next save, and the report says how far the run got).
    /// - Throws: what `run()` throws.
    @_optimize(none)
    package func runOnPostgres(started: (PostgresStart) throws -> Void) throws -> (ImportReport, splitFailure: (any Error)?) {
        let sqliteOnly: [(String, Bool, String)] = [
            ("chunks", options.chunks != nil, "a PostgreSQL store keeps its chunks in the database"),
            ("keepChunks", options.keepChunks, "a PostgreSQL store keeps its chunks in the database"),
            ("deleteStore", options.deleteStore, "to start over, drop the database and create it again"),
            ("keepIndexes", options.keepIndexes, "a PostgreSQL store keeps its indexes during imports"),
            ("maxRejects", options.maxRejects != nil, "a PostgreSQL run imports what it can and keeps the rest in _ingest_rejects"),
        ]
        if let (name, _, why) = sqliteOnly.first(where: { $0.1 }) {
            throw ImportError("\(name) works on SQLite stores only: \(why)")
        }
        let url = try coordinator?.postgresURL ?? PostgresURL(options.store)
        var postgres = PostgresImportOptions(workers: options.workers, saveEvery: options.saveEvery, chunkSize: options.chunkSize,
                                             leaseSeconds: options.leaseSeconds ?? 30, abandonRun: options.abandonRun,
                                             logger: options.logger)
        postgres.again = options.again
        postgres.metrics = options.metrics
        postgres.replay = options.replay
        postgres.readsKeptChunkFiles = options.readsKeptChunkFiles
        postgres.coordinator = coordinator
        switch work {
        case .join(let run):
            try started(PostgresStart(run: run, registered: false))
            return try join(url: url, run: run, split: nil, options: postgres, feed: "")
        case .feed(let text):
            let pipeline = try text ?? pipelineText()
            let start = try PostgresImport.start(feed: options.feed, pipeline: pipeline, url: url, options: postgres, splitAlongside: true)
            // The split's chunk files are this process's: they go when its part ends, however it ends.
            defer { if let directory = start.chunksDirectory { try? FileManager.default.removeItem(atPath: directory) } }
            try started(PostgresStart(run: start.run, registered: start.registered))
            postgres.localChunks = start.chunksDirectory
            let split = start.needsSplit ? start.chunksDirectory.map { PostgresJoin.SplitAlongside(feed: options.feed, directory: $0) } : nil
            return try join(url: url, run: start.run, split: split, options: postgres, feed: options.feed)
        }
    }

    /// The pipeline file's bytes for a run to store, model file included (an importer made
    /// from a spec has only its path).
    private func pipelineText() throws -> [UInt8] {
        guard let path = options.pipelinePath else {
            throw ImportError("\(options.store): a PostgreSQL run stores its pipeline's text for the processes that join it: make the importer with Importer(pipeline:options:), or give options.pipelinePath")
        }
        return try PipelineSpec.resolvedText(path: path)
    }

    /// Runs this process's part of run `run` (and its split, when given) to the end.
    private func join(url: PostgresURL, run: Int?, split: PostgresJoin.SplitAlongside?, options postgres: PostgresImportOptions,
                      feed: String) throws -> (ImportReport, splitFailure: (any Error)?) {
        let join = PostgresJoin(url: url, options: postgres) { [self] event in
            publishing.withLock { _ in publish(event()) }
        }
        activeJoin.withLock { $0 = join }
        defer { activeJoin.withLock { $0 = nil } }
        // A cancel that came before the join existed (during the registration) stops it at once.
        if isCancelled { join.cancel() }
        let started = StageTimes.now()
        let part: PostgresJoin.Report
        if let run, let split {
            part = try join.run(run: run, splitting: split)
        } else {
            part = try join.run(run: run)
        }
        let report = ImportReport(postgres: part, feed: feed, store: url.description)
        publishing.withLock { _ in
            publish(ImportProgress(chunksTotal: part.split?.chunks, chunksSplit: part.split?.chunks ?? 0, chunksDone: part.chunks,
                                   recordsThisRun: part.records + part.rejected, rejected: part.runRejected, counts: [:],
                                   elapsed: StageTimes.now() - started, isFinal: true))
        }
        return (report, part.splitFailure)
    }
}

extension ImportReport {
    /// What a process's part in a PostgreSQL run did, in the terms of a SQLite run's report:
    /// `records` and `rejected` are the run's so far (all of it once `runFinished`), the rest
    /// this process's.
    init(postgres part: PostgresJoin.Report, feed: String, store: String) {
        self.init(feed: feed, store: store, records: part.runRecords, feedBytes: part.split?.bytes ?? 0, imported: part.records,
                  rejectedThisRun: part.rejected, rejected: part.runRejected, counts: [:], chunks: part.chunks, workers: part.workers,
                  seconds: part.seconds, recordsPerSecond: Double(part.records) / max(part.seconds, 0.001), megabytesPerSecond: 0,
                  peakRSSBytes: ImportReport.peakRSS(), stages: StageTimes(), rejectsFile: "")
        outcomes = part.outcomes
        run = part.run
        members = part.members.isEmpty ? nil : part.members
        process = part.process
        runFinished = part.runFinished
        stopped = part.stopped
        leasesLost = part.leasesLost
        retries = part.retries
        chunksGivenBack = part.chunksGivenBack
    }
}
