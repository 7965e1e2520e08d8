import ArgumentParser
import Foundation
import IngestJSON
import IngestPipeline
import IngestStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The commands' work on a PostgreSQL store: `import` registers a run (its chunks go into
/// the database as the split makes them) and imports it as one of its processes; `join`
/// and `resume` import the run beside any other processes, on any machine.
struct PostgresRunBackend: RunBackend {
    let url: PostgresURL

    func importFeed(_ command: Ingest.Import) throws {
        let sqliteOnly = [("--chunks", command.chunks != nil, "a PostgreSQL store keeps its chunks in the database"),
                          ("--keep-chunks", command.keepChunks, "a PostgreSQL store keeps its chunks in the database"),
                          ("--delete-store", command.deleteStore, "to start over, drop the database and create it again"),
                          ("--keep-indexes", command.keepIndexes, "a PostgreSQL store keeps its indexes during imports"),
                          ("--max-rejects", command.running.maxRejects != nil, "a PostgreSQL run imports what it can and keeps the rest in _ingest_rejects")]
        if let (flag, _, why) = sqliteOnly.first(where: { $0.1 }) {
            throw CommandFailure("\(flag) works on SQLite stores only: \(why)")
        }
        if command.dryRun {
            let database = URLComponents(string: command.store)?.path.split(separator: "/").last.map(String.init) ?? "store"
            return try command.dryRunImport(rejects: database + ".dry-run.rejects.ndjson")
        }
        let feed = command.feed
        var bytes: [UInt8]
        // For a pipeline inferred here: members first seen after its sample fail the run.
        var check: (ImportReport) throws -> Void = { _ in }
        if let pipeline = command.pipeline {
            _ = try PipelineSpec.load(path: pipeline)
            // A model file it names goes in with it: joined processes read the run's pipeline from the database.
            bytes = try PipelineSpec.resolvedText(path: pipeline)
            if command.evolve {
                bytes = try command.evolved(bytes, file: pipeline, unmapped: (try? PostgresImport.latestPipeline(url: url))??.unmapped ?? MemberCensus())
            }
        } else if command.evolve, let (text, unmapped) = try PostgresImport.latestPipeline(url: url) {
            // The newest run's pipeline, grown by this feed (the run keeps it: no file to write).
            bytes = try command.evolved(Array(text.utf8), file: nil, unmapped: unmapped)
        } else if !command.shape.isGiven, let text = try PostgresImport.newestPipeline(url: url) {
            // As a SQLite store keeps the pipeline its first import inferred, a PostgreSQL
            // store's runs keep theirs: the newest one's is used (the hint a stopped split
            // prints, `ingest import FEED --store URL`, then continues it). Shape options
            // still infer one, as before.
            if !command.running.quiet { Console.error("ingest: no --pipeline: using the pipeline of the store's newest run\n") }
            bytes = Array(text.utf8)
        } else {
            let inference = try command.inferFromFeed()
            if !command.running.quiet {
                Console.error("ingest: no --pipeline: inferred one from the feed; the run keeps it in the store\n")
                Ingest.Infer.explain(inference, to: nil)
            }
            bytes = Array(inference.text.utf8)
            let spec = inference.spec
            let keyed = spec.model.entity(spec.recordEntity)?.uniquenessConstraints.isEmpty == false
            check = { report in
                try command.checkSampleReachedEveryMember(report.members, records: report.records,
                                                          listedIn: "SELECT census FROM _ingest_members WHERE run = \(report.run ?? 0) has them all",
                                                          rejected: report.rejected, rejectsIn: "ingest status \(ShellWord.quoted(url.description)) counts them",
                                                          keyed: keyed, storeFirstRun: false)
            }
        }
        try importFeed(feed, pipeline: bytes, running: command.running, saveEvery: command.saveEvery, chunkSize: command.chunkSize,
                       abandonRun: command.abandonRun, leaseSeconds: command.leaseSeconds, again: command.again, check: check)
    }

    func resume(_ running: RunOptions) throws {
        try join(run: nil, running: running)
    }

    func join(run: Int?, fromDatabase: Bool, _ running: RunOptions) throws {
        try join(run: run, running: running, fromDatabase: fromDatabase)
    }

    func printStatus() throws {
        Self.printStatus(try ImportStatus.read(store: url.description))
    }

    func check() throws {
        try RunBackends.report(check: try ImportStatus.check(store: url.description), of: url.description,
                               passed: "chunk markers, unique indexes, to-one references")
    }

    /// `ingest import FEED --store postgresql://…`: registers the run, then imports as one of its processes.
    private func importFeed(_ feed: String, pipeline: [UInt8], running: RunOptions, saveEvery: Int?,
                            chunkSize: Int?, abandonRun: Bool, leaseSeconds: Double?, again: Bool = false,
                            check: (ImportReport) throws -> Void = { _ in }) throws {
        var options = Importer.Options(feed: feed, store: url.description, workers: running.workers, saveEvery: saveEvery,
                                       chunkSize: chunkSize, abandonRun: abandonRun, logger: try StderrLogHandler.logger(running.logLevel))
        options.leaseSeconds = leaseSeconds
        options.again = again
        do {
            try running.metrics.exporting(quiet: running.quiet) { exporter in
                options.metrics = exporter?.factory
                try run(try Importer(pipeline: pipeline, options: options), running: running, check: check)
            }
        } catch let error as ImportError where { if case .alreadyImported = error.kind { true } else { false } }() {
            if !running.quiet { print(Advice.message(error, for: Ingest.Import.self)) }
        }
    }

    /// `ingest join` and `ingest resume`: one more process importing the store's run.
    private func join(run: Int?, running: RunOptions, fromDatabase: Bool = false) throws {
        if running.maxRejects != nil {
            throw CommandFailure("--max-rejects works on SQLite stores only for now; a PostgreSQL run imports every record it can and keeps the rest in _ingest_rejects")
        }
        var options = Importer.Options(store: url.description, workers: running.workers, logger: try StderrLogHandler.logger(running.logLevel))
        options.readsKeptChunkFiles = !fromDatabase
        // An address that cannot connect: its error alone, with no run to continue.
        _ = try PostgresConnection(url)
        do {
            try running.metrics.exporting(quiet: running.quiet) { exporter in
                options.metrics = exporter?.factory
                try self.run(Importer(joining: run, options: options), running: running)
            }
        } catch let error as ImportError where error.kind == .noImport(store: url.description) {
            let status = try ImportStatus.read(store: url.description)
            let last = status.runs.last.map { "its last import, run \($0.number), is \($0.state)" } ?? "no import has started"
            if !running.quiet { print("\(url): nothing to join: \(last)") }
        }
    }

    /// Runs this process's part of the import, stopping at a save boundary on SIGINT/SIGTERM/SIGHUP,
    /// and prints what it did. A failed split beside the workers is the command's error.
    func run(_ importer: Importer, running: RunOptions, check: (ImportReport) throws -> Void = { _ in }) throws {
        let signals = StopSignals { importer.cancel() }
        defer { signals.cancel() }
        func commandError(_ error: any Error) -> any Error {
            if let lost = error as? PostgresError, lost.isConnectionLoss {
                return CommandFailure("\(url): \(lost); the run is kept as far as it was saved: continue with: ingest join \(ShellWord.quoted(url.description))")
            }
            return error
        }
        var progress: PostgresProgressLine?
        // Only a run under way is kept as far as it was saved (an address that never answered has none).
        var began = false
        let report: ImportReport
        let splitFailure: (any Error)?
        do {
            defer { progress?.stop() }
            (report, splitFailure) = try importer.runOnPostgres { start in
                if !running.quiet, let run = start.run {
                    if start.registered {
                        Console.error("ingest: \(url): run \(run) registered; its chunks are registered in the database as the split makes them, and imported meanwhile (stored there for any process that joins); other machines join with: ingest join \(ShellWord.quoted(url.description))\n")
                    } else if importer.spec != nil {
                        Console.error("ingest: \(url): continuing its unfinished run \(run) of this feed\n")
                    }
                }
                began = true
                if !running.quiet {
                    progress = PostgresProgressLine(url: url, run: start.run)
                    progress?.start()
                }
            }
        } catch let error as PostgresError where began && error.isConnectionLoss {
            // The saves that committed are kept; the run goes on from its markers.
            throw commandError(error)
        } catch StoreError.postgres(let error) where began && error.isConnectionLoss {
            throw commandError(error)
        }
        let runFinished = report.runFinished ?? false, stopped = report.stopped ?? false
        let run = report.run ?? 0
        if !running.quiet {
            print("\(url): run \(run): this process (\(report.process ?? ""), \(report.workers) worker(s)) imported \(Format.records(report.imported)) in \(report.chunks) chunk(s) and rejected \(Format.count(report.rejectedThisRun)) in \(Format.seconds(report.seconds)) (\(Format.count(Int(Double(report.imported) / max(report.seconds, 0.001)))) records/s)")
            print("  " + Ingest.Import.outcomesLine(report.outcomes ?? RecordOutcomes()))
            if let lost = report.leasesLost, lost > 0 { print("  lost \(lost) chunk lease(s) to other processes (this one stalled past the lease)") }
            if let retries = report.retries, retries > 0 { print("  tried \(retries) save(s) again after the server rolled them back (--log-level debug names them)") }
            if let given = report.chunksGivenBack, given > 0 { print("  gave \(given) chunk(s) back to take a free chunk before them first (chunks commit in feed order)") }
            print(runFinished
                  ? "  run \(run) finished: \(Format.records(report.records)) done, \(Format.count(report.rejected)) rejected in all (ingest status \(url) lists them)"
                  : stopped
                  ? "  run \(run) stopped here: \(Format.records(report.records)) done so far"
                  : "  run \(run) goes on in other processes: \(Format.records(report.records)) done so far")
            (report.members ?? MemberCensus()).lines(indent: "  ", more: "ingest status \(url) lists them").forEach { print($0) }
        }
        if let splitFailure { throw commandError(splitFailure) }
        if stopped { signals.exit(continueWith: "ingest join \(ShellWord.quoted(url.description))") }
        if runFinished { try check(report) }
        if report.rejectedThisRun > 0 { throw ExitCode(3) }
    }
}

extension PostgresRunBackend {
    static func printStatus(_ status: ImportStatus) {
        let unfinished = status.runs.contains { $0.state == "running" }
        guard !status.runs.isEmpty else {
            print("\(status.store): no import has run yet (0 runs)")
            return
        }
        print("\(status.store): \(unfinished ? "import not finished" : "import finished") (\(status.runs.count) run(s))")
        print("  " + status.counts.sorted { $0.key < $1.key }.map { "\($0.key): \(Format.count($0.value))" }.joined(separator: ", "))
        for run in status.runs {
            let state = switch (run.state, run.liveProcesses ?? 0) {
            case ("running", 0): "interrupted (no process is importing it; continue with: ingest join \(ShellWord.quoted(status.store)))"
            case ("running", let live): "running (\(live) process\(live == 1 ? "" : "es") importing it)"
            default: run.state
            }
            print("  run \(run.number): \(state), started \(run.started)" + (run.ended.map { ", ended \($0)" } ?? ""))
            print("    chunks: \(run.chunksComplete) of \(run.chunkCount ?? 0) complete, \(run.chunksHeld) held now; records done: \(Format.count(run.recordsDone)) of \(Format.count(run.records ?? 0)); rejected: \(Format.count(run.rejected))")
            if run.chunksKept > 0 {
                // Their bytes are only in that process's chunk files: it stores them for processes that join.
                let files = run.keptIn.map { " in \($0)" } ?? ""
                print("    kept by \(run.keptBy ?? "the splitting process")\(files) (not stored in the database): \(run.chunksKept) chunk(s)"
                      + (run.keeperAlive ? "" : "; that process is gone: "
                         + (run.keptIn.map { "ingest join where \($0) can be read imports them, or " } ?? "")
                         + "ingest join or ingest import where \(run.feed) can be read stores them"))
            }
            run.members.lines(indent: "    ", more: "SELECT census FROM _ingest_members WHERE run = \(run.number) has them all").forEach { print($0) }
            if let replayed = run.replayed {
                print("    " + Ingest.Replay.line(replayed, finished: run.state == "finished"))
            }
            print("    feed: \(run.feed)" + (run.replayed != nil && run.state == "finished" ? " (the replay's, removed when it finished)" : ""))
        }
        guard let newest = status.runs.last else { return }
        print("  processes of run \(newest.number):")
        let rows = status.processes.map { process in
            [process.id, process.alive ? "alive"
                : process.suspended ? "stopped by a signal (no heartbeat for \(Format.seconds(process.secondsSinceHeartbeat)); kill -CONT \(process.pid) continues it)"
                : (process.state == "running" ? "dead (no heartbeat for \(Format.seconds(process.secondsSinceHeartbeat)))" : process.state),
             String(process.workers), String(process.chunks), Format.count(process.records),
             Format.count(Int(process.recordsPerSecond)), process.holding.map(String.init).joined(separator: ",")]
        }
        if rows.isEmpty { print("    none yet") } else {
            let table = Table.render(header: ["process", "state", "workers", "chunks", "records", "records/s", "holding"], rows: rows)
            print(table.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n"))
        }
        if !status.rejects.isEmpty {
            print("  first rejects of run \(newest.number) (SELECT record FROM _ingest_rejects WHERE run = \(newest.number) lists them all):")
            status.rejects.forEach { print("    " + $0) }
        }
    }
}

