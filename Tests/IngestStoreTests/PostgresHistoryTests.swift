import Foundation
import IngestTestSupport
import Synchronization
import Testing
@testable import IngestStore

/// History tokens on PostgreSQL, where processes commit at once and transaction IDs are
/// not commit order: no commit is skipped, none comes twice.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PostgresHistoryTests {
    /// Moves the Photo table's row numbers past `row`: history naming a row its table never
    /// gave is damage, and these tests record history for rows they do not write.
    static func reserveRows(upTo row: Int64, _ url: PostgresURL) throws {
        try PostgresConnection(url).execute("SELECT setval(pg_get_serial_sequence('\"Photo\"', '_pk'), \(row))")
    }

    static func changes(_ rows: [Int64]) -> HistoryChanges {
        var changes = HistoryChanges()
        changes.add("Photo", .insert, rows: rows)
        return changes
    }

    @Test func aTransactionThatTookAnEarlierIDButCommitsLaterIsNotSkipped() throws {
        let (coordinator, directory) = try TestModel.store(on: .postgres)
        defer { withExtendedLifetime(directory) {} }
        let url = try PostgresURL(coordinator.path)
        try Self.reserveRows(upTo: 2, url)
        let start = try coordinator.currentHistoryToken()
        let early = try PostgresPool.connect(url)
        let late = try PostgresPool.connect(url)
        try early.execute("BEGIN")
        let earlyID = Int64(try early.execute("SELECT pg_current_xact_id()::text")[0, 0]!)!
        try late.execute("BEGIN")
        let latePosition = try HistoryLog.record(Self.changes([2]), author: "late", on: StoreConnection(kind: .postgres(late)))
        try late.execute("COMMIT")
        #expect(earlyID < latePosition, "the early transaction took the lower ID")

        let first = try coordinator.fetchHistory(after: start)
        #expect(first.transactions.map(\.author) == ["late"])
        let earlyPosition = try HistoryLog.record(Self.changes([1]), author: "early", on: StoreConnection(kind: .postgres(early)))
        try early.execute("COMMIT")
        #expect(earlyPosition == earlyID)
        // A consumer that kept "after the highest position seen" would never see it.
        let second = try coordinator.fetchHistory(after: first.token)
        #expect(second.transactions.map(\.author) == ["early"])
        #expect(try coordinator.fetchHistory(after: second.token).transactions.isEmpty)
        // So would one that resumed from the late transaction's own token.
        #expect(try coordinator.fetchHistory(after: first.transactions[0].token).transactions.map(\.author) == ["early"])
    }

    /// Four writers commit N transactions or more each, holding each open a random while (a tenth
    /// roll back); a consumer fetches in small pages and restarts from its saved token (as
    /// JSON, on a new coordinator) N times meanwhile (N is 100 with `INGEST_STRESS`, 25
    /// without). It gets every committed transaction once, and nothing rolled back.
    @Test func concurrentWritersAndARestartingConsumerSeeEveryCommitExactlyOnce() throws {
        let rounds = Stress.count(100, quick: 25)
        let (coordinator, directory) = try TestModel.store(on: .postgres)
        defer { withExtendedLifetime(directory) {} }
        let url = try PostgresURL(coordinator.path)
        try Self.reserveRows(upTo: 10_000_000, url)
        let committed = Mutex<Set<Int64>>([])
        let failures = Mutex<[String]>([])
        let writing = Atomic(4)
        let restartCount = Atomic(0)
        for writer in 0..<4 {
            Thread.detachNewThread {
                defer { writing.subtract(1, ordering: .relaxed) }
                do {
                    let connection = try PostgresPool.connect(url)
                    var random = SystemRandomNumberGenerator()
                    var number = 0
                    // At least `rounds` each, and on until the consumer has restarted `rounds` times.
                    while number < rounds || restartCount.load(ordering: .relaxed) < rounds {
                        defer { number += 1 }
                        let row = Int64(writer * 1_000_000 + number)
                        try connection.execute("BEGIN")
                        _ = try connection.execute("SELECT pg_current_xact_id()")
                        usleep(UInt32.random(in: 0...4_000, using: &random))
                        try HistoryLog.record(Self.changes([row]), author: "writer \(writer)", on: StoreConnection(kind: .postgres(connection)))
                        if Int.random(in: 0..<10, using: &random) == 0 {
                            try connection.execute("ROLLBACK")
                        } else {
                            try connection.execute("COMMIT")
                            committed.withLock { _ = $0.insert(row) }
                        }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        var saved = try JSONEncoder().encode(try coordinator.currentHistoryToken())
        var consumer = coordinator
        var received: [Int64] = []
        var restarts = 0
        func restartNow() throws {
            // The consumer stops here and starts again from what it saved.
            consumer = try PersistentStoreCoordinator(model: TestModel.model, url: URL(string: coordinator.path)!)
            restarts += 1
            restartCount.store(restarts, ordering: .relaxed)
        }
        func drain() throws {
            while true {
                if restarts < rounds, writing.load(ordering: .relaxed) > 0, Int.random(in: 0..<4) == 0 { try restartNow() }
                let fetch = try consumer.fetchHistory(after: try JSONDecoder().decode(HistoryToken.self, from: saved), limit: Int.random(in: 1...4))
                for transaction in fetch.transactions {
                    received += transaction.changes.map { $0.objectID.primaryKey! }
                    saved = try JSONEncoder().encode(transaction.token)
                }
                saved = try JSONEncoder().encode(fetch.token)
                if fetch.transactions.isEmpty { return }
            }
        }
        while writing.load(ordering: .relaxed) > 0 {
            if restarts < rounds, Bool.random() { try restartNow() }
            try drain()
            usleep(UInt32.random(in: 0...3_000))
        }
        try drain()
        #expect(failures.withLock { $0 } == [])
        #expect(restarts == rounds, "the consumer restarted \(restarts) times while the writers wrote")
        #expect(received.count == Set(received).count, "no transaction came twice")
        #expect(Set(received) == committed.withLock { $0 }, "every commit came, and nothing rolled back")
    }
}
