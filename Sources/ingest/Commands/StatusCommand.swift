import ArgumentParser
import IngestPipeline
import IngestStore

extension Ingest {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Where the imports into a store stand: its runs, records, rejects and counts (works while one runs).",
            discussion: """
            Example:
              ingest status photos.sqlite --check
            """
        )

        @Argument(help: "The store file, or a PostgreSQL URL (postgresql://…).")
        var store: String

        @Flag(help: "Also check the store: SQLite's integrity check, to-ones, uniqueness, and the marker against the rows; on PostgreSQL the chunk markers, unique indexes and to-ones; on both the history's rows (exit 1 on a problem).")
        var check = false

        func run() throws {
            let backend = try RunBackends.open(store)
            try check ? backend.check() : backend.printStatus()
        }
    }
}
