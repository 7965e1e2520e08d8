import ArgumentParser
import Foundation
import IngestJSON
import IngestPipeline
import IngestStore

/// The commands' work on a SQLite store: one process imports a run (`Importer`), its
/// workers taking chunks from the split's local queue.
struct SQLiteRunBackend: RunBackend {
    let path: String

    func importFeed(_ command: Ingest.Import) throws {
        if command.dryRun { return try command.dryRunImport(rejects: path + ".dry-run.rejects.ndjson") }
        var (spec, pipeline, source) = try command.loadOrInferPipeline()
        if command.evolve && source != .inferredNow {
            guard command.feed == "-" || !FileOps.isReadOnce(command.feed) else { throw CommandFailure("--evolve reads a sample of the feed first: it needs a file, not \(command.feed)") }
            let unmapped = (try? ImportStatus.read(store: path))?.latest.members ?? MemberCensus()
            spec = try PipelineSpec.parse(try command.evolved(try FileOps.readFile(pipeline), file: pipeline, unmapped: unmapped))
        }
        if command.deleteStore && FileManager.default.fileExists(atPath: path) {
            try PersistentStoreCoordinator.checkIsStoreOrNew(at: path)
            Console.error("ingest: --delete-store: deleting \(path) and everything imported into it\n")
        }
        let running = command.running
        if !command.deleteStore, (try? PersistentStoreCoordinator.checkIsStoreOrNew(at: path)) != nil,
           FileOps.fileSize(path).map({ $0 > 0 }) == true {
            // Said, and not counted in the new run's time (the run would remove them silently).
            for (run, files) in (try? Importer.removeLeftoverChunks(store: path)) ?? [] where !running.quiet {
                Console.error("ingest: removed \(files) chunk file(s) that finished run \(run) left behind\n")
            }
        }
        var options = Importer.Options(feed: command.feed, store: path, chunks: command.chunks, workers: running.workers,
                                       saveEvery: command.saveEvery, chunkSize: command.chunkSize, abandonRun: command.abandonRun,
                                       deleteStore: command.deleteStore, keepChunks: command.keepChunks,
                                       maxRejects: running.maxRejects, keepIndexes: command.keepIndexes,
                                       pipelinePath: pipeline, pipelineInferred: source.isInferred,
                                       logger: try StderrLogHandler.logger(running.logLevel))
        options.again = command.again
        let keyed = spec.model.entity(spec.recordEntity)?.uniquenessConstraints.isEmpty == false
        try running.metrics.exporting(quiet: running.quiet) { exporter in
            options.metrics = exporter?.factory
            try Ingest.Import.run(Importer(spec: spec, options: options), store: path, quiet: running.quiet, pipelineSource: source) { report in
                guard source == .inferredNow else { return }
                try command.checkSampleReachedEveryMember(report.members, records: report.records, listedIn: "\(path).report.json lists them",
                                                          rejected: report.rejected, rejectsIn: "see \(report.rejectsFile)",
                                                          keyed: keyed, storeFirstRun: report.run == 1)
            }
        }
    }

    func resume(_ running: RunOptions) throws {
        let status: ImportStatus
        do {
            status = try ImportStatus.read(store: path)
        } catch StoreError.notAStore where (try? PersistentStoreCoordinator.checkIsStoreOrNew(at: path)) != nil {
            // Empty, or SQLite without tables: an import stopped before it recorded anything
            // (found by probing: "not an Ingest store" sent the user nowhere).
            throw CommandFailure("\(path) holds no import yet (an import stopped before its store was made leaves it so): start one with ingest import FEED --store \(path)")
        }
        guard let run = status.unfinishedRun else {
            let last = status.runs[status.runs.count - 1]
            if !running.quiet { print("\(path): nothing to resume: its last import, run \(last.number) of \(last.feed), is \(last.state)") }
            for (run, files) in (try? Importer.removeLeftoverChunks(store: path)) ?? [] where !running.quiet {
                print("  removed \(files) chunk file(s) that finished run \(run) left behind")
            }
            return
        }
        guard let pipeline = run.pipeline else {
            throw CommandFailure("\(path) does not record run \(run.number)'s pipeline path; run ingest import again instead")
        }
        let source = run.feed == "-" ? "standard input" : "a pipe (\(run.feed))"
        let pipeAgain = "Pipe the same feed in again: … | ingest import - --pipeline \(pipeline) --store \(path) (the records already imported are skipped)"
        // A feed read once is not read again: a finished split's chunk files stand for it
        // (found by probing: such a run, stopped after its split, could not be resumed).
        // (By the run's record too: a process substitution's /dev/fd path is gone by now.)
        let withoutFeed = run.feedWasReadOnce || FileOps.isReadOnce(run.feed)
        if withoutFeed, !SplitManifest.isFinished(run.chunks) {
            throw CommandFailure("run \(run.number) read its feed from \(source), which cannot be read again from here, and \(run.chunks) holds no finished split of it. \(pipeAgain)")
        }
        var options = Importer.Options(store: path, workers: running.workers, logger: try StderrLogHandler.logger(running.logLevel))
        options.maxRejects = running.maxRejects
        do {
            try running.metrics.exporting(quiet: running.quiet) { exporter in
                options.metrics = exporter?.factory
                // The run's feed, pipeline, chunks and sizes, as the store recorded them.
                try Ingest.Import.run(try Importer(resuming: options), store: path, quiet: running.quiet)
            }
        } catch let error as SplitError where withoutFeed {
            throw CommandFailure("run \(run.number) read its feed from \(source), and \(error). \(pipeAgain)")
        } catch let error as ImportError {
            // `resume` cannot resume a run whose feed changed: its way on is the feed, or a new run.
            guard case .unfinishedRun(_, let number, let feed, let reasons) = error.kind else { throw error }
            // Name what changed (found by probing: an edited pipeline was blamed on the feed).
            let changed = [reasons.contains { $0.hasPrefix("the feed") } ? "its feed \(feed)" : nil,
                           reasons.contains { $0.hasPrefix("the pipeline") } ? "its pipeline \(pipeline)" : nil].compactMap { $0 }
            let putBack = changed.isEmpty ? "its feed \(feed)" : changed.joined(separator: " and ")
            throw CommandFailure("\(path): run \(number) cannot go on: \(reasons.joined(separator: "; ")). Put \(putBack) back as it was "
                + "and run ingest resume \(path) again; or import the feed as it is now as a new run: ingest import \(feed) --pipeline \(pipeline) --store \(path) --abandon-run (what run \(number) imported stays)")
        }
    }

    func join(run: Int?, fromDatabase: Bool, _ running: RunOptions) throws {
        throw ValidationError("join works on PostgreSQL stores (postgresql://…); to continue an import into \(path), run ingest resume \(path)")
    }

    func printStatus() throws {
        let status = try ImportStatus.read(store: path)
        print("\(path): \(status.finished ? "import finished" : "import not finished") (\(status.runs.count) run(s))")
        print("  " + status.counts.sorted { $0.key < $1.key }.map { "\($0.key): \(Format.count($0.value))" }.joined(separator: ", "))
        for run in status.runs {
            let state = switch run.activity {
            case .importing(let pid, let host, let since)?: "running (pid \(pid) on \(host)\(since.isEmpty ? "" : ", since \(since)"))"
            case .suspended(let pid, let host)?: "running, but its process is stopped (pid \(pid) on \(host): kill -CONT \(pid) continues it)"
            case .interrupted? where run.feedError != nil:
                "stopped at a malformed part of its feed, after importing every chunk before it (a resume would stop there again: fix the feed, then import it again with --abandon-run): \(run.feedError!.split(separator: "\n").first ?? "")"
            case .interrupted?: "interrupted (no process is importing it; continue with: \(Ingest.Import.continuation(store: path, feed: run.feed, pipeline: run.pipeline, chunks: run.chunks)))"
            case nil: run.state
            }
            print("  run \(run.number): \(state), started \(run.started)" + (run.ended.map { ", ended \($0)" } ?? ""))
            let total = run.chunkCount.map(String.init) ?? "? (the split has not finished)"
            print("    chunks: \(run.chunksComplete) of \(total) complete; records done: \(Format.count(run.recordsDone)); rejected: \(Format.count(run.rejected))")
            if let outcomes = run.outcomes {
                print("    records: \(Format.count(outcomes.inserted)) inserted, \(Format.count(outcomes.updated)) updated, \(Format.count(outcomes.unchanged)) unchanged")
            }
            run.members.lines(indent: "    ", more: "the run's report lists them all").forEach { print($0) }
            if let replayed = run.replayed {
                print("    " + Ingest.Replay.line(replayed, finished: run.state == "finished"))
            }
            let replayFiles = run.replayed != nil && run.state == "finished" ? " (the replay's, removed when it finished)" : ""
            print("    feed: \(run.feed)\(replayFiles)")
            if let pipeline = run.pipeline { print("    pipeline: \(pipeline)" + (run.inferred ? " (inferred from the feed)" : replayFiles)) }
        }
        if status.indexesDeferred { print("  secondary indexes: dropped until the import finishes (queries work, slower)") }
    }

    func check() throws {
        try RunBackends.report(check: try ImportStatus.check(store: path), of: path,
                               passed: "SQLite integrity, to-one references, uniqueness, value types, import marker")
    }
}
