import ArgumentParser
import Foundation
import IngestJSON
import IngestPipeline
import IngestStore

extension Ingest {
    struct Replay: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import rejected records again, after fixing them or the pipeline, as a new run.",
            discussion: """
            Reads a rejects file (default: a SQLite store's STORE.rejects.ndjson; for a PostgreSQL \
            store, its rejects table) and imports each line's record, its "text" as the file holds \
            it, as a new run of the store, with the pipeline of the runs the records came from \
            (or --pipeline). Fix records by editing their text (in a copy given with --rejects), \
            or fix the pipeline; a line left out of the file is not replayed and stays rejected. \
            When the run finishes, the replayed rejects leave the store's rejects in the same \
            transaction: each record is imported, or rejected again as a reject of the new run, \
            whose line names where the record first came from ("replayOf"). Interrupted, the run \
            is continued by ingest resume. Exit status 0 when every record imported, 3 when some \
            were rejected again.

            Examples:
              jq -c 'select(.reason | startswith("views")) | .text |= (fromjson | .views = 0 | tojson)' \\
                photos.sqlite.rejects.ndjson > fixed.ndjson
              ingest replay photos.sqlite --rejects fixed.ndjson
              ingest replay postgresql:///photos --export rejects.ndjson   # the rejects, to edit
            """
        )

        @Argument(help: "The store file, or a PostgreSQL URL (postgresql://…).")
        var store: String

        @Option(help: "The rejects file to replay (default: STORE.rejects.ndjson; on PostgreSQL, every reject the store keeps).")
        var rejects: String?

        @Option(help: "The pipeline to import the records with (default: the one their runs were imported with).")
        var pipeline: String?

        @Option(help: "Write the store's rejects to this new file, as a rejects file, and import nothing.")
        var export: String?

        @OptionGroup var running: RunOptions

        func validate() throws {
            if export != nil, rejects != nil || pipeline != nil {
                throw ValidationError("--export writes the store's rejects and imports nothing: it does not go with --rejects or --pipeline")
            }
        }

        /// What `ingest status` says of a replay's run.
        static func line(_ replayed: ImportStatus.Run.Replayed, finished: Bool) -> String {
            let runs = replayed.fromRuns.map(String.init).joined(separator: ", ")
            return "replays \(Format.count(replayed.records)) rejected record(s) of run\(replayed.fromRuns.count == 1 ? "" : "s") \(runs)"
                + (finished ? "; their old rejects went when it finished" : "; their old rejects stay until it finishes")
        }

        private func absolute(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.path }

        func run() throws {
            if let export {
                let count = try IngestPipeline.Replay.export(store: store, to: export)
                if !running.quiet { print("\(store): wrote \(Format.count(count)) reject(s) to \(export): fix their text, then ingest replay \(ShellWord.quoted(store)) --rejects \(ShellWord.quoted(export))") }
                return
            }
            let postgres = PostgresURL.isPostgres(store)
            let replay = try IngestPipeline.Replay.load(store: store, rejectsFile: rejects, pipelinePath: pipeline)
            let runs = replay.originRuns.map(String.init).joined(separator: ", ")
            let source = rejects ?? (postgres ? "the store's rejects" : store + ".rejects.ndjson")
            if !running.quiet {
                Console.error("ingest: replaying \(Format.count(replay.records.count)) rejected record(s) of run\(replay.originRuns.count == 1 ? "" : "s") \(runs) from \(source) as a new run\n")
            }
            var options = Importer.Options(feed: "", store: store, workers: running.workers, logger: try StderrLogHandler.logger(running.logLevel))
            options.maxRejects = running.maxRejects
            let said = { (report: ImportReport) in
                guard !running.quiet, let replayed = report.replayed ?? (postgres ? replay.records.count : nil) else { return }
                let again = report.rejectedThisRun
                print("  replayed \(Format.count(replayed)) rejected record(s): \(Format.count(replayed - again)) imported, \(Format.count(again)) rejected again"
                      + (again > 0 ? (postgres ? " (kept in _ingest_rejects under run \(report.run ?? 0); ingest replay \(ShellWord.quoted(store)) --export FILE lists them)"
                                              : " (their lines in \(store).rejects.ndjson name, under replayOf, where each record first came from)") : ""))
                if let rejects, postgres || absolute(rejects) != absolute(store + ".rejects.ndjson") {
                    print("  \(rejects) is as you left it: the store's rejects are in \(postgres ? "_ingest_rejects" : store + ".rejects.ndjson")")
                }
            }
            try running.metrics.exporting(quiet: running.quiet) { exporter in
                options.metrics = exporter?.factory
                let importer = try Importer(replaying: replay, options: options)
                if postgres {
                    try PostgresRunBackend(url: try PostgresURL(store)).run(importer, running: running, check: said)
                } else {
                    try Ingest.Import.run(importer, store: store, quiet: running.quiet, check: said)
                }
            }
        }
    }
}
