import Foundation
public import IngestJSON
import IngestStore

/// Where the imports into a store stand, read from the store alone (works while an
/// import runs: readers never wait for its writer), on SQLite or PostgreSQL alike. The
/// top-level fields describe the latest run; `runs` lists them all. A few fields are one
/// backend's only, and say so.
public struct ImportStatus: Sendable {
    /// One import run into the store.
    public struct Run: Sendable {
        public var number: Int
        /// "running" (unfinished: stopped, or still going), "finished" or "abandoned".
        public var state: String
        public var feed: String
        public var pipeline: String?
        public var chunks: String
        /// Read once (standard input, a pipe, process substitution): recorded without a size.
        public var feedWasReadOnce = false
        /// The run stopped at a malformed part of its feed, after importing every chunk
        /// before it (`FeedError`'s description): a resume would stop there again.
        public var feedError: String?
        /// Chunks in the feed; nil while the split has not finished.
        public var chunkCount: Int?
        public var chunkSize: Int
        public var saveEvery: Int?
        public var chunksComplete: Int
        public var recordsDone: Int
        public var rejected: Int
        public var started: String
        public var ended: String?
        public var inferred: Bool
        public var outcomes: RecordOutcomes?
        /// The members the run's records held that its pipeline does not map, so far.
        public var members = MemberCensus()
        /// For an unfinished run of a SQLite store: whether a process imports it now.
        public var activity: Activity?
        /// A replay's run (`ingest replay`): how many rejected records it imports again, and
        /// the runs they first came from; nil for a run of a feed.
        public var replayed: Replayed?

        /// What a replay's run imports again.
        public struct Replayed: Sendable, Equatable {
            public var records: Int
            public var fromRuns: [Int]

            init(_ links: [Replay.Link]) {
                records = links.count
                fromRuns = Set(links.map(\.origin.run)).sorted()
            }
        }

        // MARK: PostgreSQL only (a run many processes share)

        /// Records in the run's feed, as far as it is split.
        public var records: Int? = nil
        /// Chunks held now by the processes importing the run.
        public var chunksHeld = 0
        /// Unfinished chunks whose bytes only the process that split them has (not stored in
        /// the database): it stores them when other processes want work.
        public var chunksKept = 0
        /// That process, when some chunks are kept (see `chunksKept`).
        public var keptBy: String? = nil
        /// Where that process keeps their files (a process that can read them there claims them).
        public var keptIn: String? = nil
        /// Whether that process is alive (else a process that can read the feed stores them).
        public var keeperAlive = false
        /// Processes importing the run now (running, with a heartbeat within the lease): a
        /// running run with none was interrupted, and joining it continues it. Nil on SQLite.
        public var liveProcesses: Int? = nil
    }

    /// A process importing a PostgreSQL store's newest run, as `_ingest_processes` has it.
    public struct Process: Sendable {
        public var id: String
        public var host: String
        public var pid: Int
        public var workers: Int
        /// running, finished, stopped or failed, as the process last said.
        public var state: String
        /// Whether its heartbeat is within the lease (a running process that is not alive died,
        /// or is `suspended`).
        public var alive: Bool
        /// Running, without a heartbeat, and stopped by a signal on this machine (`kill -CONT`
        /// continues it), rather than dead.
        public var suspended: Bool
        public var chunks: Int
        public var records: Int
        /// Chunks it holds now.
        public var holding: [Int]
        public var seconds: Double
        public var secondsSinceHeartbeat: Double
        public var recordsPerSecond: Double { seconds > 0 ? Double(records) / seconds : 0 }
    }

    /// Who imports an unfinished run now, as the store's import lock says.
    public enum Activity: Sendable, Equatable {
        /// A live process holds the lock.
        case importing(pid: Int32, host: String, since: String)
        /// The process holding the lock is stopped (SIGSTOP, a debugger): SIGCONT continues it.
        case suspended(pid: Int32, host: String)
        /// No process imports it: it was killed, stopped by a signal or failed; `ingest resume` continues it.
        case interrupted
    }

    /// The store, as it was named (a PostgreSQL URL without its password).
    public var store: String
    public var runs: [Run]
    public var counts: [String: Int]
    public var finished: Bool
    /// The secondary indexes are dropped until the import finishes (reads work, slower).
    public var indexesDeferred: Bool
    /// PostgreSQL: the processes of the newest run, oldest first (empty on SQLite).
    public var processes: [Process] = []
    /// PostgreSQL: the newest run's first rejects, each as its JSON line (on SQLite they
    /// are in the rejects file).
    public var rejects: [String] = []

    /// The latest run (a SQLite store has at least one when its status can be read; check
    /// `runs` first on PostgreSQL, whose status reads with none).
    public var latest: Run { runs[runs.count - 1] }
    public var feed: String? { latest.feed }
    public var pipeline: String? { latest.pipeline }
    public var chunks: String? { latest.chunks }
    /// Chunks in the latest run's feed; nil while its split has not finished.
    public var chunkCount: Int? { latest.chunkCount }
    /// Records per chunk and per save, as the latest run was started with.
    public var chunkSize: Int { latest.chunkSize }
    public var saveEvery: Int? { latest.saveEvery }
    public var chunksComplete: Int { latest.chunksComplete }
    public var recordsDone: Int { latest.recordsDone }
    public var rejected: Int { latest.rejected }

    /// The latest run that is not finished, if any: what `ingest resume` continues.
    public var unfinishedRun: Run? { runs.last.flatMap { $0.state == "running" ? $0 : nil } }

    /// Where the imports into `store` stand: a SQLite file's path or a PostgreSQL URL.
    /// - Throws: `StoreError` for a file that is not an Ingest store; `ImportError` for a
    ///   SQLite store that no import has written to; `PostgresError` when a PostgreSQL
    ///   store cannot be reached or is not an Ingest store (nothing was imported into it).
    public static func read(store: String) throws -> ImportStatus {
        PostgresURL.isPostgres(store) ? try readPostgres(url: try PostgresURL(store)) : try readSQLite(store: store)
    }

    /// Checks a store: on SQLite, SQLite's integrity check, Ingest's own (to-ones point at
    /// rows, uniqueness holds) and each run's marker; on PostgreSQL, the chunk markers,
    /// the unique indexes and the to-one references. Works during an import.
    /// - Returns: the problems found; empty for a sound store.
    /// - Throws: `StoreError` for a file that is not an Ingest store; `PostgresError` when a
    ///   PostgreSQL store cannot be reached.
    public static func check(store: String) throws -> [String] {
        PostgresURL.isPostgres(store) ? try PostgresStatus.check(url: try PostgresURL(store)) : try checkSQLite(store: store)
    }
}
