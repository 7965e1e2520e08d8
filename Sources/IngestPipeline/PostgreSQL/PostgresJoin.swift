import Foundation
package import IngestJSON
package import IngestStore
import Logging
import Synchronization

/// One process's part in an import on a PostgreSQL store: it registers itself, keeps a
/// heartbeat (which renews the leases of the chunks it holds), and runs workers that
/// claim chunks until the run has none left. Any number of processes, on any machines,
/// may join the same run; one killed at any moment loses nothing (its saves are whole
/// transactions) and repeats nothing (its chunks go on from their markers once its
/// leases run out).
package final class PostgresJoin: Sendable {
    package let url: PostgresURL
    package let options: PostgresImportOptions
    /// Set to stop at the next save boundary (a signal, say); `cancel()` stops the split too.
    let cancellation = Atomic<Bool>(false)
    /// Told after every save, with what makes the run's progress event (`Importer`'s observers).
    let progress: (@Sendable (_ event: () -> ImportProgress) -> Void)?
    /// Stops the split this process makes beside its workers, if any.
    let splitCancellation = SplitCancellation()

    /// What this process did.
    package struct Report: Sendable {
        package var run: Int
        package var process: String
        package var workers: Int
        package var chunks: Int
        package var records: Int
        package var rejected: Int
        package var outcomes: RecordOutcomes
        package var seconds: Double
        /// Whether the run has no chunk left (this process or another finished it).
        package var runFinished: Bool
        package var stopped: Bool
        package var leasesLost: Int
        /// The run's totals, as the store has them after this process is done.
        package var runRecords: Int
        package var runRejected: Int
        /// The members the run's records held that the pipeline does not map (the whole run's, so far).
        package var members = MemberCensus()
        /// What the split made beside the workers (`run(run:splitting:)`), when it finished.
        package var split: PostgresImport.Split? = nil
        /// Why the split made beside the workers failed: the workers stopped at their next
        /// save, and the run is kept as far as it was saved.
        package var splitFailure: (any Error)? = nil
        /// Saves rolled back and tried again (deadlocks, keys made elsewhere at the same moment):
        /// none when the run's chunks commit in feed order, as they do.
        package var retries = 0
        /// Chunks this process gave back before saving in them, to claim a free chunk before them.
        package var chunksGivenBack = 0
    }

    package init(url: PostgresURL, options: PostgresImportOptions,
                 progress: (@Sendable (_ event: () -> ImportProgress) -> Void)? = nil) {
        self.url = url
        self.options = options
        self.progress = progress
    }

    /// Joins the store's running import (`run`, or the newest unfinished one).
    /// - Throws: `ImportError.noImport` when no run is unfinished; `PostgresError` when the
    ///   store cannot be reached or written; `PipelineError` when the run's pipeline no
    ///   longer loads; `ImportError.chunkChanged` when a chunk's bytes were altered.
    package func run(run wanted: Int? = nil) throws -> Report {
        try ImportRun.run(PostgresRunStore(join: self, run: wanted, split: nil))
    }

    /// Imports run `run`, registered here by `PostgresImport.start(splitAlongside: true)`,
    /// while splitting its feed beside the workers (`PostgresImport.split`): each chunk is
    /// stored as it is made, and this and other processes import it meanwhile. A split that
    /// fails stops the workers at their next save; its error is `Report.splitFailure` (or
    /// what this throws, when the workers failed too).
    /// - Throws: what `run(run:)` throws.
    package func run(run: Int, splitting split: SplitAlongside) throws -> Report {
        try ImportRun.run(PostgresRunStore(join: self, run: run, split: split))
    }

    /// Stops the process's part at the next save boundary, and its split after the chunk
    /// being written (a signal, say). The run goes on from its markers in any process.
    package func cancel() {
        cancellation.store(true, ordering: .relaxed)
        splitCancellation.cancel()
    }
}

extension PostgresJoin {
    /// The split a process makes beside its workers: the run's feed, and the directory for
    /// its chunk files (`PostgresImport.Started.chunksDirectory`), which the workers read
    /// instead of the database's copies.
    package struct SplitAlongside: Sendable {
        package var feed: String
        package var directory: String

        package init(feed: String, directory: String) {
            self.feed = feed
            self.directory = directory
        }
    }
}

/// A process's heartbeat, on a thread and connection of its own: every third of the
/// lease it marks the process alive and renews the leases of the chunks it holds.
final class Heartbeat: Sendable {
    private let thread = ManagedThread(name: "ingest.heartbeat")
    private let url: PostgresURL
    private let process: String
    private let leaseSeconds: Double
    private let logger: Logger

    /// A heartbeat for `process`, beating once started.
    init(url: PostgresURL, process: String, leaseSeconds: Double, logger: Logger) {
        (self.url, self.process, self.leaseSeconds, self.logger) = (url, process, leaseSeconds, logger)
    }

    /// Starts beating on the heartbeat's thread.
    func start() {
        let (url, process, leaseSeconds, logger) = (url, process, leaseSeconds, logger)
        thread.start { stop in
            var connection: PostgresConnection?
            var last = Date.distantPast
            while !stop.isStopped {
                if Date().timeIntervalSince(last) >= leaseSeconds / 3 {
                    last = Date()
                    do {
                        if connection == nil || connection?.isOK == false {
                            connection = try PostgresConnection(url)
                            try PostgresCommitTurns.label(connection!, process: process)
                            // A beat that cannot finish within the lease is no beat.
                            try connection!.execute("SET statement_timeout = \(Int(leaseSeconds * 1000))")
                        }
                        try connection!.execute("UPDATE _ingest_processes SET heartbeat = now() WHERE id = $1", [process])
                        try connection!.execute("""
                            UPDATE _ingest_chunks SET lease_until = now() + make_interval(secs => $2)
                            WHERE left(owner, length($1) + 1) = $1 || '/' AND finished IS NULL
                            """, [process, String(leaseSeconds)])
                    } catch {
                        logger.warning("heartbeat failed; chunks held may be claimed by others when their lease ends", metadata: ["error": "\(error)"])
                        connection = nil
                    }
                }
                stop.wait(seconds: max(0, leaseSeconds / 3 - Date().timeIntervalSince(last)))
            }
        }
    }

    func stop() {
        // A beat stuck on a dead network must not keep the process from ending.
        thread.stop(waitingAtMost: 5)
    }
}
