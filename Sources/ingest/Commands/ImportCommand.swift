import ArgumentParser
import Foundation
import IngestJSON
import IngestPipeline
import IngestStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension Ingest {
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import a feed into a store with a pipeline; run again to continue a stopped import.",
            discussion: """
            The feed's shape (a top-level array, records at a key path, or NDJSON) and how \
            records map onto the model are set in the pipeline file (see Pipelines/ and the \
            article "Pipelines"). FEED may be a .gz file, - for standard input, or an http(s):// \
            address. Without --pipeline, one \
            is inferred from the first --sample records (standard input is first copied to a \
            file of Ingest's own, which goes when the import ends); a feed without records \
            imports nothing and exits 0.

            Each import is a run recorded in the store: a store takes any number of feeds, \
            and a record whose key is stored already updates that object by the pipeline's \
            onConflict rules. Running the same command again continues a stopped run. The \
            feed is split into chunks (STORE.chunks/run-N unless --chunks), deleted when the \
            run finishes unless --keep-chunks. Records that cannot be mapped or saved go to \
            STORE.rejects.ndjson with their run, chunk, index and reason.

            With --store postgresql://…, the chunks go into the database and any number of \
            `ingest join` processes, on any machine, import the run beside this one (see ingest \
            join --help).

            Exit status: 0 imported, nothing rejected; 3 finished, some records rejected; \
            1 failed (including: every record rejected, unless --max-rejects allows it; and, \
            for a pipeline inferred by this import, members first seen after its sample, which \
            the run left out: the message names them and the command that imports them); \
            129/130/143 stopped by SIGHUP/SIGINT/SIGTERM at a save boundary (resumable).

            Example:
              ingest import photos.json --pipeline Pipelines/photos.json --store photos.sqlite
            """
        )

        @Argument(help: "The feed: a file, - for standard input, or an http:// or https:// address (gzip or not).")
        var feed: String

        @Option(help: ArgumentHelp("The pipeline file (default: one inferred from the feed, kept as STORE.pipeline.json).", valueName: "file"))
        var pipeline: String?

        @Option(help: ArgumentHelp("The store file (created if missing), or a PostgreSQL URL (postgresql://user@host:port/db).", valueName: "file|url"))
        var store: String

        @Option(name: .customLong("save-every"), help: "Records per save.")
        var saveEvery: Int?

        @Option(name: .customLong("chunk-size"), help: "Records per chunk file.")
        var chunkSize: Int?

        @Option(help: ArgumentHelp("Directory for the chunk files.", valueName: "dir"))
        var chunks: String?

        @Flag(name: .customLong("abandon-run"),
              help: "Leave the store's unfinished run as it is (what it imported stays) and import this feed as a new run.")
        var abandonRun = false

        @Flag(name: .customLong("delete-store"), help: "Delete the store and everything imported into it first, then import.")
        var deleteStore = false

        @Flag(help: "Import the feed even when the store's last run imported the same feed with the same pipeline (by default: nothing to do).")
        var again = false

        @Flag(name: .customLong("keep-chunks"), help: "Keep the chunk files when the run finishes (default: delete them).")
        var keepChunks = false

        @Option(name: .customLong("lease-seconds"), help: ArgumentHelp("PostgreSQL stores: seconds a chunk stays claimed without a heartbeat.", visibility: .hidden))
        var leaseSeconds: Double?

        @Flag(help: ArgumentHelp("Removed: it deleted the store without saying so. See --abandon-run and --delete-store.", visibility: .hidden))
        var restart = false

        @Flag(name: .customLong("keep-indexes"), help: "Keep secondary indexes during the import (default: build them at the end).")
        var keepIndexes = false

        @Flag(help: "Add the fields the feed has and the pipeline does not map, as optional attributes (explained on stderr; the pipeline file is updated and the store migrated). A field whose type changed is reported, not converted.")
        var evolve = false

        @OptionGroup(title: "Without --pipeline: the feed's shape, for the pipeline inferred from it (as ingest infer takes them)")
        var shape: RecordShapeOptions

        @Option(help: "Without --pipeline, or with --evolve: records the inference reads (default: 1000). A member first seen after them in a pipeline inferred by this import fails the run at its end, naming the command that imports it.")
        var sample: Int?

        /// What the pipeline inferred without --pipeline reads.
        var inference: PipelineInference.Options { shape.inference(sample: sample ?? 1_000) }

        @Flag(name: .customLong("dry-run"),
              help: "Read, map and check every record against the model and the stored objects (update rules included) on a copy of the store made beside it and removed after; write nothing, print what the import would do, and write the records it would reject to STORE.dry-run.rejects.ndjson (exit 3 when there are some). On PostgreSQL the copy is made on the server (CREATE DATABASE … TEMPLATE: nobody else may be connected). Needs --pipeline.")
        var dryRun = false

        @OptionGroup var running: RunOptions

        var workers: Int? { running.workers }
        var maxRejects: Int? { running.maxRejects }
        var quiet: Bool { running.quiet }

        func validate() throws {
            for (name, value) in [("--save-every", saveEvery), ("--chunk-size", chunkSize)] {
                if let value, value < 1 { throw ValidationError("\(name) must be at least 1") }
            }
            if let sample, sample < 1 { throw ValidationError("--sample must be at least 1") }
            if pipeline != nil && (shape.isGiven || (sample != nil && !evolve)) {
                throw ValidationError("--records-at, --ndjson, --keyed, --header-row and --sample shape the pipeline inferred without --pipeline; with one, its \"feed\" says where the records are")
            }
            if dryRun {
                if pipeline == nil { throw ValidationError("--dry-run needs --pipeline (without one, the import would write the pipeline it infers beside the store)") }
                let writes = [("--evolve", evolve), ("--delete-store", deleteStore), ("--keep-chunks", keepChunks), ("--chunks", chunks != nil)]
                if let (name, _) = writes.first(where: { $0.1 }) { throw ValidationError("--dry-run writes nothing: it does not go with \(name)") }
            }
            if restart {
                throw ValidationError("--restart was removed: it deleted the store without saying so. To import another feed into a store whose run is unfinished, pass --abandon-run (what was imported stays); to delete the store first, pass --delete-store")
            }
        }

        func run() throws {
            do {
                try RunBackends.open(store).importFeed(self)
            } catch let empty as PipelineInference.EmptyFeed {
                // Nothing to infer from is nothing to import: said, and no failure (found by probing: `[]` exited 1).
                if !quiet { print(nothingToImport(empty)) }
            }
        }

        /// With --evolve, `pipeline` (from `file`, when it came from one) grown by what this
        /// feed adds, the file rewritten when it changed; else `pipeline` as it is.
        func evolved(_ pipeline: [UInt8], file: String?, unmapped: MemberCensus) throws -> [UInt8] {
            guard evolve else { return pipeline }
            if let file, let model = PipelineSpec.namedModelFile(try FileOps.readFile(file)) {
                throw CommandFailure("\(file): the pipeline names its model file (\(model)), which --evolve cannot change: add the attributes to the model, then import")
            }
            let evolution = try readingTwice { path, name in
                try PipelineUpdate.evolve(pipeline, feed: path, name: name, sample: sample ?? 1_000, unmapped: unmapped)
            }
            if !quiet { PipelineUpdate.explain(evolution, title: "ingest: --evolve: \(feed) against the pipeline" + (file.map { " \($0)" } ?? "")) }
            guard !evolution.added.isEmpty else { return pipeline }
            if let file {
                try FileOpsCLI.write(evolution.text, to: file)
                if !quiet { Console.error("  \(file) updated; the store takes the new attributes as it opens\n") }
            }
            return Array(evolution.text.utf8)
        }

        /// Runs an import with SIGINT, SIGTERM and SIGHUP stopping it at the next save boundary
        /// (exit 130, 143, 129).
        /// `check` sees the report of a run that finished, before its exit status is decided.
        static func run(_ importer: Importer, store: String, quiet: Bool, pipelineSource: PipelineSource? = nil,
                        check: (ImportReport) throws -> Void = { _ in }) throws {
            let signals = StopSignals { importer.cancel() }
            defer { signals.cancel() }
            let view = ImportProgressView()
            if !quiet { importer.addProgressObserver { view.show($0) } }
            let report: ImportReport
            do {
                report = try importer.run()
                view.finish()
            } catch let error as ImportError where { if case .alreadyImported = error.kind { true } else { false } }() {
                view.finish()
                if !quiet { print(Advice.message(error, for: Ingest.Import.self)) }
                return
            } catch is ImportInterrupted {
                view.finish()
                signals.exit(continueWith: resumeCommand(importer))
            } catch {
                view.finish()
                throw error
            }
            if !quiet {
                printSummary(report, reportPath: importer.reportPath, pipelineSource: pipelineSource)
                if let chunks = importer.options.chunks, let target = try? FileManager.default.destinationOfSymbolicLink(atPath: chunks) {
                    print("  chunks: \(chunks) is a symbolic link; the chunk files are in \(target)")
                }
            }
            try check(report)
            try exitStatus(report, maxRejects: importer.options.maxRejects)
        }

        /// 3 when the run finished with rejects, by this process or an earlier one of the same
        /// run (found by probing: a resume that rejected nothing more exited 0); a failure when
        /// this process rejected every record it read (unless --max-rejects allows that many).
        static func exitStatus(_ report: ImportReport, maxRejects: Int?) throws {
            // A replay whose records all failed again did what it was asked: they are its rejects now.
            if report.rejectedThisRun > 0, report.replayed == nil, report.imported == 0, maxRejects.map({ report.rejectedThisRun > $0 }) ?? true {
                throw CommandFailure("every record this run read was rejected (\(Format.count(report.rejectedThisRun))); see \(report.rejectsFile) for the reasons")
            }
            if report.rejected > 0 { throw ExitCode(3) }
        }

        /// What continues a stopped import: `ingest resume`, or for a feed read from
        /// standard input, the same feed piped in again.
        static func resumeCommand(_ importer: Importer) -> String {
            continuation(store: importer.options.store, feed: importer.options.feed, pipeline: importer.options.pipelinePath)
        }

        /// What continues an unfinished run of `feed`: `ingest resume`, or for a feed that can
        /// be read only once, the same feed piped in again.
        static func continuation(store: String, feed: String, pipeline: String?, chunks: String? = nil) -> String {
            guard feed == "-" || FileOps.isReadOnce(feed) else { return "ingest resume \(store)" }
            // A finished split's chunk files hold the whole feed: resume reads them, not the feed.
            if let directory = chunks ?? (try? ImportStatus.read(store: store))?.unfinishedRun?.chunks,
               SplitManifest.isFinished(directory) {
                return "ingest resume \(store) (the run's split finished: its chunk files in \(directory) hold the rest of the feed)"
            }
            let pipeline = pipeline.map { " --pipeline \($0)" } ?? ""
            return "the same feed on standard input again: … | ingest import -\(pipeline) --store \(store) (the records already imported are skipped)"
        }

        /// What became of the records: inserted, updated, unchanged, and the repeats among them.
        static func outcomesLine(_ outcomes: RecordOutcomes) -> String {
            "records: \(Format.count(outcomes.inserted)) inserted, \(Format.count(outcomes.updated)) updated, \(Format.count(outcomes.unchanged)) unchanged"
                + (outcomes.duplicates > 0 ? " (\(Format.count(outcomes.duplicates)) repeated a key seen earlier in this run)" : "")
        }

        static func printSummary(_ report: ImportReport, reportPath: String, pipelineSource: PipelineSource? = nil) {
            print("\(report.feed) → \(report.store): \(Format.records(report.records)) in \(report.chunks) chunk(s), \(report.workers) worker(s)")
            if let run = report.run { print("  run \(run)" + (report.abandonedRun.map { "; run \($0) was left unfinished (--abandon-run)" } ?? "")) }
            switch pipelineSource {
            case .inferredNow?: print("  pipeline: inferred from this feed (\(report.store).pipeline.json)")
            case .inferredEarlier?: print("  pipeline: \(report.store).pipeline.json, inferred for this store by an earlier import")
            case .given?: break
            case nil: if report.pipelineInferred == true { print("  pipeline: inferred from a feed (\(report.store).pipeline.json)") }
            }
            print("  imported \(Format.count(report.imported)) and rejected \(Format.count(report.rejectedThisRun)) this run; \(Format.count(report.rejected)) rejected in all runs (\(report.rejectsFile))")
            if let outcomes = report.outcomes { print("  " + outcomesLine(outcomes)) }
            if let outside = report.outsideRecords { print("  " + SplitRun.outsideRecordsLine(outside)) }
            report.members?.lines(indent: "  ", more: "the report lists them all").forEach { print($0) }
            print("  " + report.counts.sorted { $0.key < $1.key }.map { "\($0.key): \(Format.count($0.value))" }.joined(separator: ", "))
            print("  \(Format.seconds(report.seconds)), \(Format.count(Int(report.recordsPerSecond))) records/s, \(Format.rate(report.megabytesPerSecond)) MB/s, peak RSS \(ByteCount.format(report.peakRSSBytes))")
            let stages = report.stages
            print("  stages: split \(Format.seconds(stages.split)) (alongside), parse \(Format.seconds(stages.parse)), map \(Format.seconds(stages.map)), save \(Format.seconds(stages.save)) (summed over workers), indexes \(Format.seconds(stages.index))")
            if !report.remadeChunks.isEmpty {
                print("  made again from the feed (changed or missing since the split): " + report.remadeChunks.joined(separator: ", "))
            }
            if let deleted = report.deletedChunks, let directory = report.chunksDirectory {
                print("  chunks: deleted the \(deleted) chunk file(s) in \(directory) (the run finished; --keep-chunks keeps them)")
            }
            if let stale = report.staleLock { print("  took over the lock file left by a run that is gone (\(stale))") }
            print("  report: \(reportPath)")
        }
    }
}
