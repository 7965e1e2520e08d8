import Foundation
import IngestStore
import Synchronization
@testable import IngestPipeline

/// PostgreSQL imports by several processes at once, as tests make them: each join has
/// connections, writers and knowledge of its own, as a process of its own would.
enum PostgresJoins {
    /// How one join ended: its report, or why it failed.
    struct Outcome: Sendable {
        var report: PostgresJoin.Report?
        var failure: String?
    }

    /// Starts a run of `feed` at `url`, then has `processes` joins import it at once.
    /// - Throws: when the run cannot be started; the joins' failures are in their outcomes.
    static func importRun(_ feed: String, pipeline: [UInt8], url: String, options: PostgresImportOptions,
                          processes: Int) throws -> [Outcome] {
        let started = try PostgresImport.start(feed: feed, pipeline: pipeline, url: try PostgresURL(url), options: options)
        let outcomes = Mutex<[Outcome]>([])
        let group = DispatchGroup()
        for _ in 0..<processes {
            let join = PostgresJoin(url: try PostgresURL(url), options: options)
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let outcome: Outcome
                do { outcome = Outcome(report: try join.run(run: started.run)) } catch { outcome = Outcome(failure: "\(error)") }
                outcomes.withLock { $0.append(outcome) }
            }
        }
        group.wait()
        return outcomes.withLock { $0 }
    }
}
