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

        @Flag(help: "Also check the store: SQLite's integrity check, to-ones, uniqueness, and the marker against the rows; on PostgreSQL the chunk markers, unique indexes and to-ones (exit 1 on a problem).")
        var check = false

        func run() throws {
            if PostgresURL.isPostgres(store) {
                let url = try PostgresURL(store)
                guard check else { return PostgresCLI.printStatus(try PostgresStatus.read(url: url)) }
                let problems = try PostgresStatus.check(url: url)
                if problems.isEmpty {
                    print("\(url): check passed (chunk markers, unique indexes, to-one references)")
                    return
                }
                print("\(url): check found \(problems.count) problem(s):")
                problems.forEach { print("  - " + $0) }
                throw ExitCode(1)
            }
            if check {
                let problems = try ImportStatus.check(store: store)
                if problems.isEmpty {
                    print("\(store): check passed (SQLite integrity, to-one references, uniqueness, import marker)")
                } else {
                    print("\(store): check found \(problems.count) problem(s):")
                    problems.forEach { print("  - " + $0) }
                }
                if !problems.isEmpty { throw ExitCode(1) }
                return
            }
            let status = try ImportStatus.read(store: store)
            print("\(store): \(status.finished ? "import finished" : "import not finished") (\(status.runs.count) run(s))")
            print("  " + status.counts.sorted { $0.key < $1.key }.map { "\($0.key): \(Format.count($0.value))" }.joined(separator: ", "))
            for run in status.runs {
                let state = switch run.activity {
                case .importing(let pid, let host, let since)?: "running (pid \(pid) on \(host)\(since.isEmpty ? "" : ", since \(since)"))"
                case .suspended(let pid, let host)?: "running, but its process is stopped (pid \(pid) on \(host): kill -CONT \(pid) continues it)"
                case .interrupted?: "interrupted (no process is importing it; continue with: \(Import.continuation(store: store, feed: run.feed, pipeline: run.pipeline)))"
                case nil: run.state
                }
                print("  run \(run.number): \(state), started \(run.started)" + (run.ended.map { ", ended \($0)" } ?? ""))
                let total = run.chunkCount.map(String.init) ?? "? (the split has not finished)"
                print("    chunks: \(run.chunksComplete) of \(total) complete; records done: \(Format.count(run.recordsDone)); rejected: \(Format.count(run.rejected))")
                if let outcomes = run.outcomes {
                    print("    records: \(Format.count(outcomes.inserted)) inserted, \(Format.count(outcomes.updated)) updated, \(Format.count(outcomes.unchanged)) unchanged")
                }
                print("    feed: \(run.feed)")
                if let pipeline = run.pipeline { print("    pipeline: \(pipeline)" + (run.inferred ? " (inferred from the feed)" : "")) }
            }
            if status.indexesDeferred { print("  secondary indexes: dropped until the import finishes (queries work, slower)") }
        }
    }
}
