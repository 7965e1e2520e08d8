import ArgumentParser
import IngestJSON
import IngestPipeline
import IngestStore

extension Ingest {
    struct Resume: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Continue a stopped import, with the feed, pipeline and chunks the store records.",
            discussion: """
            Continues the store's unfinished run; a store whose last run finished has nothing to \
            resume (exit 0). Exit statuses as for ingest import.

            Example:
              ingest resume photos.sqlite --workers 4
            """
        )

        @Argument(help: "The store file.")
        var store: String

        @OptionGroup var running: RunOptions

        var workers: Int? { running.workers }
        var maxRejects: Int? { running.maxRejects }
        var quiet: Bool { running.quiet }

        func run() throws {
            if PostgresURL.isPostgres(store) {
                return try PostgresCLI.join(url: try PostgresURL(store), run: nil, running: running)
            }
            let status = try ImportStatus.read(store: store)
            guard let run = status.unfinishedRun else {
                let last = status.runs[status.runs.count - 1]
                if !quiet { print("\(store): nothing to resume: its last import, run \(last.number) of \(last.feed), is \(last.state)") }
                return
            }
            guard let pipeline = run.pipeline else {
                throw CommandFailure("\(store) does not record run \(run.number)'s pipeline path; run ingest import again instead")
            }
            guard !FileOps.isReadOnce(run.feed) else {
                let source = run.feed == "-" ? "standard input" : "a pipe (\(run.feed))"
                throw CommandFailure("run \(run.number) read its feed from \(source), which cannot be read again from here. Pipe the same feed in again: … | ingest import - --pipeline \(pipeline) --store \(store) (the records already imported are skipped)")
            }
            let spec = try PipelineSpec.load(path: pipeline)
            let importer = Importer(spec: spec, options: .init(feed: run.feed, store: store, chunks: run.chunks, workers: workers,
                                                              saveEvery: run.saveEvery, chunkSize: run.chunkSize,
                                                              maxRejects: maxRejects, pipelinePath: pipeline,
                                                              logger: try StderrLogHandler.logger(running.logLevel)))
            do {
                try Import.run(importer, store: store, quiet: quiet)
            } catch let error as ImportError {
                // `resume` cannot resume a run whose feed changed: its way on is the feed, or a new run.
                guard case .unfinishedRun(_, let number, let feed, let reasons) = error.kind else { throw error }
                throw CommandFailure("\(store): run \(number) cannot go on: \(reasons.joined(separator: "; ")). Put its feed \(feed) back as it was "
                    + "and run ingest resume \(store) again; or import the feed as it is now as a new run: ingest import \(feed) --pipeline \(pipeline) --store \(store) --abandon-run (what run \(number) imported stays)")
            }
        }
    }
}
