import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Synchronization
import Testing
@testable import IngestPipeline

/// A PostgreSQL run's claims wait for chunks on a notification (LISTEN/NOTIFY), not a sleep.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PostgresChunkWaitTests {
    /// A claim waiting before the run has any chunk gets the first one the split registers,
    /// woken by the notification of that chunk's commit: its waits' timeouts are made longer
    /// than the test allows, and none of its waits ran out.
    // The limit is wall time from the test's start, which in a full parallel run includes the
    // time it waits for the machine: at 2 minutes it tripped once (480 s, 2026-11-29) while
    // every expectation below held, so it is as long as the other PostgreSQL tests' limits.
    @Test(.timeLimit(.minutes(10)))
    func aWaitingClaimIsWokenByTheSplitsNotification() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 300, seed: 3).write(to: feed)
        let url = try PostgresURL(server.url)
        let options = PostgresImportOptions(workers: 1, saveEvery: 100, chunkSize: 100)
        let pipeline = try FileOps.readFile(PostgresImportTests.photos)
        // Registered, not split: no chunk yet, and its split is under way as far as the run says.
        let started = try PostgresImport.start(feed: feed, pipeline: pipeline, url: url, options: options, splitAlongside: true)
        #expect(started.needsSplit)
        let connection = try PostgresConnection(url)
        let (_, record) = try #require(try PostgresImport.record(of: started.run, connection))
        // Each wait's timeout 5 s or more (0.05 s × 100): far longer than a notification takes,
        // short enough that a missed one still ends the test within its limit.
        let source = PostgresChunkSource(connection: connection, url: url, run: started.run, record: record, owner: "test/1",
                                         localChunks: nil, timeoutScale: 100, logger: options.logger)
        let claimed = Mutex<Int?>(nil)
        // The claim runs on a thread of its own; this one reads the source's counters (atomics).
        let shared = UncheckedSendable(source)
        let claiming = Thread {
            let chunk = try? shared.value.claim(until: { false })
            claimed.withLock { $0 = chunk?.info.index ?? -1 }
        }
        claiming.start()
        // The claim found no chunk and waits.
        while source.waits.load(ordering: .relaxed) == 0, claimed.withLock({ $0 }) == nil { usleep(1_000) }
        try #require(claimed.withLock { $0 } == nil, "the claim ended before it waited")
        // The split holds off after its first chunk (registered, committed, notified) until the
        // claim has it: so the claim was woken by that chunk's notification, not the split's end.
        let claimedMidSplit = Mutex(false)
        _ = try PostgresImport.split(feed: feed, run: started.run, url: url, directory: dir.file("chunks"), options: options,
                                     onStored: { chunk, _ in
            guard chunk.index == 1 else { return }
            let deadline = Date().addingTimeInterval(30)
            while claimed.withLock({ $0 }) == nil, Date() < deadline { usleep(1_000) }
            claimedMidSplit.withLock { $0 = claimed.withLock { $0 } != nil }
        })
        while claimed.withLock({ $0 }) == nil { usleep(1_000) }
        #expect(claimed.withLock { $0 } == 1, "the first chunk the split registered")
        #expect(source.waits.load(ordering: .relaxed) >= 1)
        #expect(claimedMidSplit.withLock { $0 }, "the claim had the first chunk before the split went on")
        #expect(source.notifiedWaits.load(ordering: .relaxed) == source.waits.load(ordering: .relaxed),
                "every wait ended by a notification, none by its timeout")
    }
}
