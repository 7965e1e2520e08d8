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

        @Argument(help: "The store file, or a PostgreSQL URL (postgresql://…: the same as ingest join).")
        var store: String

        @OptionGroup var running: RunOptions

        func run() throws {
            try RunBackends.open(store).resume(running)
        }
    }
}
