import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Logging
import Synchronization
import Testing
@testable import IngestPipeline

/// Feed order across processes (`PostgresCommitTurns`): a worker waits to save a chunk
/// until every chunk before it is finished.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PostgresCommitTurnsTests {
    /// A run of three chunks, registered and stored, none claimed, and turns for it (never
    /// stopped or failed).
    struct Fixture {
        let server: PostgresServer
        let run: Int
        let connection: PostgresConnection
        let turns: PostgresCommitTurns

        init() throws {
            server = try PostgresServer.database()
            let dir = try TemporaryDirectory()
            let feed = dir.file("feed.json")
            try FeedGenerator(records: 300, seed: 5).write(to: feed)
            let url = try PostgresURL(server.url)
            let options = PostgresImportOptions(workers: 1, saveEvery: 100, chunkSize: 100)
            let started = try PostgresImport.start(feed: feed, pipeline: try FileOps.readFile(PostgresImportTests.photos), url: url,
                                                   options: options, splitAlongside: true)
            _ = try PostgresImport.split(feed: feed, run: started.run, url: url, directory: dir.file("chunks"), options: options)
            run = started.run
            connection = try PostgresConnection(url)
            turns = PostgresCommitTurns(url: url, run: run, logger: options.logger, shouldStop: { false }, hasFailed: { false })
            #expect(try connection.execute("SELECT count(*) FROM _ingest_chunks WHERE run = $1", [String(run)]).int(0, 0) == 3)
        }

        /// Leases `chunk` to `owner` for a minute.
        func hold(_ chunk: Int, by owner: String) throws {
            try connection.execute("""
                UPDATE _ingest_chunks SET owner = $3, lease_until = now() + interval '1 minute' WHERE run = $1 AND number = $2
                """, [String(run), String(chunk), owner])
        }

        /// Marks `chunks` finished and notifies, as the save finishing a chunk does.
        func finish(_ chunks: [Int]) throws {
            try connection.execute("UPDATE _ingest_chunks SET finished = now(), done = records WHERE run = $1 AND number = ANY($2::integer[])",
                                   [String(run), "{" + chunks.map(String.init).joined(separator: ",") + "}"])
            try connection.execute("NOTIFY \(PostgresCommitTurns.channel)")
        }

        /// The owner of `chunk`, or nil.
        func owner(of chunk: Int) throws -> String? {
            try connection.execute("SELECT owner FROM _ingest_chunks WHERE run = $1 AND number = $2", [String(run), String(chunk)])[0, 0]
        }
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
        let fixture = try Fixture()
        try fixture.hold(1, by: "p/1")
        try fixture.hold(3, by: "p/1")
        let own = Wait(fixture.turns, chunk: 3, owner: "p/1")
        #expect(own.result(within: 30) == "yielded")
        #expect(try [1, 2, 3].map(fixture.owner(of:)) == ["p/1", nil, nil], "the later chunk given back, the earlier one kept")

        // Chunk 2 free but 1 before it held (by another worker, alive): the waiter on 3 waits.
        try fixture.hold(3, by: "p/2")
        let other = Wait(fixture.turns, chunk: 3, owner: "p/2")
        #expect(other.result(within: 1) == nil, "waits for a chunk another worker holds")
        try fixture.finish([1, 2])
        #expect(other.result(within: 30) == "turn")
    }

    /// The same with two workers of one process waiting: the one that holds the earlier chunk
    /// gives its later one back even while the other is the waiter that reads the chunks.
    @Test(.timeLimit(.minutes(10)))
    func aWaiterThatDoesNotReadTheChunksStillSeesItHoldsTheBlockingOne() throws {
        let fixture = try Fixture()
        try fixture.hold(1, by: "p/1")
        try fixture.hold(2, by: "p/2")
        try fixture.hold(3, by: "p/1")
        // The second worker waits first, so that it reads the chunks (and listens) for both.
        let second = Wait(fixture.turns, chunk: 2, owner: "p/2")
        #expect(second.result(within: 0.5) == nil)
        let first = Wait(fixture.turns, chunk: 3, owner: "p/1")
        #expect(first.result(within: 30) == "yielded")
        #expect(try fixture.owner(of: 3) == nil)
        #expect(second.result(within: 0.5) == nil, "the second waits for chunk 1, which the first holds")
        try fixture.finish([1])
        #expect(second.result(within: 30) == "turn")
    }

    /// What a process ending with its run unfinished asks (`ChunkLease.orphaned`): the chunks
    /// left count only when no other process runs the run, so the last one to leave says so
    /// and exits with an error, not as if the run went on elsewhere.
    @Test(.timeLimit(.minutes(10)))
    func chunksLeftCountAsOrphanedOnlyWhenNoOtherLiveProcessRunsTheRun() throws {
        let fixture = try Fixture()
        let (run, connection) = (fixture.run, fixture.connection)
        func process(_ id: String, state: String, heartbeatSecondsAgo: Int = 0) throws {
            try connection.execute("""
                INSERT INTO _ingest_processes (id, run, host, pid, workers, state, heartbeat)
                VALUES ($1, $2, 'test', 1, 1, $3, now() - make_interval(secs => $4))
                ON CONFLICT (id) DO UPDATE SET state = excluded.state, heartbeat = excluded.heartbeat
                """, [id, String(run), state, String(heartbeatSecondsAgo)])
        }
        try connection.execute("DELETE FROM _ingest_processes WHERE run = $1", [String(run)])
        #expect(try ChunkLease.orphaned(run: run, endingProcess: "h:1", connection) == 3)
        try process("h:1", state: "finished")
        try process("h:2", state: "running")
        #expect(try ChunkLease.orphaned(run: run, endingProcess: "h:1", connection) == nil, "h:2 goes on with the run")
        try process("h:2", state: "running", heartbeatSecondsAgo: 3600)
        #expect(try ChunkLease.orphaned(run: run, endingProcess: "h:1", connection) == 3, "h:2's heartbeat is older than the lease")
        try process("h:2", state: "finished")
        try fixture.finish([1])
        #expect(try ChunkLease.orphaned(run: run, endingProcess: "h:1", connection) == 2)
        try fixture.finish([2, 3])
        #expect(try ChunkLease.orphaned(run: run, endingProcess: "h:1", connection) == nil, "the run is finished")
    }
}

/// A process that finished a chunk itself knows the next one's turn: no read of the chunks
/// (no server is reached here; one that would be asked refuses the connection).
@Suite struct PostgresCommitTurnsLocalTests {
    @Test func aChunkFinishedHereGivesTheNextOneItsTurnWithoutAskingTheServer() throws {
        // Port 1 on the loopback: nothing listens, so any read of the chunks fails at once.
        let url = try PostgresURL("postgresql://ingest@127.0.0.1:1/none?connect_timeout=2")
        let turns = PostgresCommitTurns(url: url, run: 1, logger: .init(label: "test"), shouldStop: { false }, hasFailed: { false })
        try turns.waitForTurn(1, owner: "p/1")
        #expect(throws: (any Error).self) { try turns.waitForTurn(2, owner: "p/1") }
        turns.finished(1)
        try turns.waitForTurn(2, owner: "p/1")
        // A chunk finished past one not known finished says nothing about those before it.
        turns.finished(3)
        #expect(throws: (any Error).self) { try turns.waitForTurn(3, owner: "p/1") }
        turns.finished(2)
        try turns.waitForTurn(3, owner: "p/1")
    }
}
