import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Synchronization
import Testing
@testable import IngestPipeline

/// Feed order across processes (`PostgresCommitTurns`): a worker waits to save a chunk
/// until every chunk before it is finished.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PostgresCommitTurnsTests {
    /// A run of three chunks, registered and stored, none claimed.
    static func run() throws -> (server: PostgresServer, url: PostgresURL, run: Int, connection: PostgresConnection) {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 300, seed: 5).write(to: feed)
        let url = try PostgresURL(server.url)
        let options = PostgresImportOptions(workers: 1, saveEvery: 100, chunkSize: 100)
        let started = try PostgresImport.start(feed: feed, pipeline: try FileOps.readFile(PostgresImportTests.photos), url: url,
                                               options: options, splitAlongside: true)
        _ = try PostgresImport.split(feed: feed, run: started.run, url: url, directory: dir.file("chunks"), options: options)
        let connection = try PostgresConnection(url)
        #expect(try connection.execute("SELECT count(*) FROM _ingest_chunks WHERE run = $1", [String(started.run)]).int(0, 0) == 3)
        return (server, url, started.run, connection)
    }

    /// Turns for `run`, never stopped or failed.
    static func turns(_ url: PostgresURL, _ run: Int) -> PostgresCommitTurns {
        PostgresCommitTurns(url: url, run: run, logger: PostgresImportOptions(workers: 1).logger, shouldStop: { false }, hasFailed: { false })
    }

    static func hold(_ chunk: Int, by owner: String, run: Int, _ connection: PostgresConnection) throws {
        try connection.execute("""
            UPDATE _ingest_chunks SET owner = $3, lease_until = now() + interval '1 minute' WHERE run = $1 AND number = $2
            """, [String(run), String(chunk), owner])
    }

    /// How `waitForTurn` ended on a thread of its own: nil while it still waits.
    final class Wait: Sendable {
        let outcome = Mutex<String?>(nil)

        init(_ turns: PostgresCommitTurns, chunk: Int, owner: String) {
            let turns = UncheckedSendable(turns)
            Thread.detachNewThread { [self] in
                let said: String
                do {
                    try turns.value.waitForTurn(chunk, owner: owner)
                    said = "turn"
                } catch is ChunkYielded {
                    said = "yielded"
                } catch {
                    said = "\(error)"
                }
                self.outcome.withLock { $0 = said }
            }
        }

        /// The outcome once there is one, or nil after `seconds`.
        func result(within seconds: Double) -> String? {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if let said = outcome.withLock({ $0 }) { return said }
                usleep(10_000)
            }
            return outcome.withLock { $0 }
        }
    }

    /// A worker whose mapping stage claimed an earlier chunk (come free) while it waited to
    /// save a later one gives the later one back at once: waiting, it would wait for itself
    /// (the hang of a multi-process import after a kill). A chunk another live worker holds
    /// is waited for, not yielded to.
    @Test(.timeLimit(.minutes(10)))
    func aWorkerWaitingBehindAChunkItHoldsItselfGivesItsLaterChunkBack() throws {
        let (server, url, run, connection) = try Self.run()
        defer { withExtendedLifetime(server) {} }
        let turns = Self.turns(url, run)
        try Self.hold(1, by: "p/1", run: run, connection)
        try Self.hold(3, by: "p/1", run: run, connection)
        let own = Wait(turns, chunk: 3, owner: "p/1")
        #expect(own.result(within: 30) == "yielded")
        let owners = try connection.execute("SELECT number, coalesce(owner, '') FROM _ingest_chunks WHERE run = $1 ORDER BY number", [String(run)])
        #expect((0..<owners.count).map { "\(owners[$0, 0] ?? ""):\(owners[$0, 1] ?? "")" } == ["1:p/1", "2:", "3:"],
                "the later chunk given back, the earlier one kept")

        // Chunk 2 free but 1 before it held (by another worker, alive): the waiter on 3 waits.
        try Self.hold(3, by: "p/2", run: run, connection)
        let other = Wait(turns, chunk: 3, owner: "p/2")
        #expect(other.result(within: 1) == nil, "waits for a chunk another worker holds")
        try connection.execute("UPDATE _ingest_chunks SET finished = now(), done = records WHERE run = $1 AND number IN (1, 2)", [String(run)])
        try connection.execute("NOTIFY \(PostgresCommitTurns.channel)")
        #expect(other.result(within: 30) == "turn")
    }

    /// The same with two workers of one process waiting: the one that holds the earlier chunk
    /// gives its later one back even while the other is the waiter that reads the chunks.
    @Test(.timeLimit(.minutes(10)))
    func aWaiterThatDoesNotReadTheChunksStillSeesItHoldsTheBlockingOne() throws {
        let (server, url, run, connection) = try Self.run()
        defer { withExtendedLifetime(server) {} }
        let turns = Self.turns(url, run)
        try Self.hold(1, by: "p/1", run: run, connection)
        try Self.hold(2, by: "p/2", run: run, connection)
        try Self.hold(3, by: "p/1", run: run, connection)
        // The second worker waits first, so that it reads the chunks (and listens) for both.
        let second = Wait(turns, chunk: 2, owner: "p/2")
        #expect(second.result(within: 0.5) == nil)
        let first = Wait(turns, chunk: 3, owner: "p/1")
        #expect(first.result(within: 30) == "yielded")
        #expect(try connection.execute("SELECT owner FROM _ingest_chunks WHERE run = $1 AND number = 3", [String(run)])[0, 0] == nil)
        #expect(second.result(within: 0.5) == nil, "the second waits for chunk 1, which the first holds")
        try connection.execute("UPDATE _ingest_chunks SET finished = now(), done = records WHERE run = $1 AND number = 1", [String(run)])
        try connection.execute("NOTIFY \(PostgresCommitTurns.channel)")
        #expect(second.result(within: 30) == "turn")
    }
}
