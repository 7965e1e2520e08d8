import ArgumentParser
import IngestPipeline
import IngestStore

/// What `import`, `join`, `resume` and `status` do with a store, by its backend: a SQLite
/// file (`SQLiteRunBackend`) or a PostgreSQL database (`PostgresRunBackend`). The commands
/// parse their options and call these, and `RunBackends.open` chooses. (Where the two
/// differ only in a message or a file's place, the command asks `PostgresURL.isPostgres`
/// itself: an inferred pipeline's file, `replay`'s wording and its run, the bench.)
protocol RunBackend {
    /// Imports `command.feed` as `ingest import` does (its options as given).
    func importFeed(_ command: Ingest.Import) throws
    /// Continues the store's unfinished run (`ingest resume`).
    func resume(_ running: RunOptions) throws
    /// Joins the store's running import (`ingest join`), run `run` or the newest.
    /// `fromDatabase`: read every chunk from the database, not from the importing process's
    /// chunk files where they can be read here.
    func join(run: Int?, fromDatabase: Bool, _ running: RunOptions) throws
    /// Prints where the store's imports stand (`ingest status`).
    func printStatus() throws
    /// Checks the store and prints what it found (`ingest status --check`).
    /// - Throws: `ExitCode(1)` when the check found a problem.
    func check() throws
}

enum RunBackends {
    /// The backend of `store`: a PostgreSQL URL (postgresql://… or postgres://…), else a SQLite file path.
    /// - Throws: `PostgresError` for a URL libpq cannot parse.
    static func open(_ store: String) throws -> any RunBackend {
        PostgresURL.isPostgres(store) ? PostgresRunBackend(url: try PostgresURL(store)) : SQLiteRunBackend(path: store)
    }

    /// Prints a check's verdict: `passed` names what was checked.
    static func report(check problems: [String], of store: String, passed: String) throws {
        if problems.isEmpty {
            print("\(store): check passed (\(passed))")
            return
        }
        print("\(store): check found \(problems.count) problem(s):")
        problems.forEach { print("  - " + $0) }
        throw ExitCode(1)
    }
}
