import Foundation
import IngestStore
import IngestTestSupport
import Synchronization
import Testing
import IngestPipeline

/// An import beside another writer of the same database (an application, say): a related
/// object the other writer makes between the import's lookup of its key and its insert is
/// found and updated by the import's record, not linked to as it was made.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PostgresOutsideWriterTests {
    /// The other writer inserts author 2 and commits only once the import's insert of the
    /// same key waits for it. Before, the import linked its post to that row and left its
    /// name and email as the other writer made them: the record's values were lost.
    @Test(.timeLimit(.minutes(2)))
    func anAuthorMadeElsewhereDuringTheImportsInsertTakesTheRecordsValues() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let pipeline = Array(UpdateRuleTests.pipelineText().utf8)
        func importLine(_ line: String, _ name: String) throws -> ImportReport {
            let feed = try dir.write(name, Array((line + "\n").utf8))
            return try Importer(pipeline: pipeline, options: Importer.Options(feed: feed, store: server.url, workers: 1)).run()
        }
        // The tables, and a first author.
        _ = try importLine(#"{"id":"p0","title":"t0","author":{"id":1,"name":"one"}}"#, "a.ndjson")

        let outside = try PostgresConnection(PostgresURL(server.url))
        try outside.execute("BEGIN")
        try outside.execute(#"INSERT INTO "Author" ("id", "name", "email") VALUES (2, 'outside', 'outside@example.com')"#)
        let report = Outcome()
        let done = DispatchSemaphore(value: 0)
        let second = try dir.write("b.ndjson", Array(#"{"id":"p1","title":"t1","author":{"id":2,"name":"feed","email":"feed@example.com"}}"#.utf8) + [10])
        Thread.detachNewThread {
            let result = Result { try Importer(pipeline: pipeline, options: Importer.Options(feed: second, store: server.url, workers: 1)).run() }
            report.value.withLock { $0 = result }
            done.signal()
        }
        // The import's insert of author 2 waits for the other writer's row.
        let watcher = try PostgresConnection(PostgresURL(server.url))
        let deadline = Date(timeIntervalSinceNow: 60)
        var waiting = false
        while !waiting, Date() < deadline, report.value.withLock({ $0 == nil }) {
            let rows = try watcher.execute(#"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO "Author"%'"#)
            waiting = try rows.int(0, 0) == 1
            if !waiting { usleep(10_000) }
        }
        try outside.execute("COMMIT")
        done.wait()
        #expect(waiting, "the import's insert never waited for the other writer's row")
        let imported = try #require(try report.value.withLock { $0 }?.get())
        #expect(imported.records == 1 && imported.rejected == 0)

        let author = try watcher.execute(#"SELECT "_pk", "name", "email" FROM "Author" WHERE "id" = 2"#)
        #expect(author.count == 1)
        #expect(author[0, 1] == "feed" && author[0, 2] == "feed@example.com", "the record's values, as if it came after the other writer")
        let link = try watcher.execute(#"SELECT "_author" FROM "Post" WHERE "id" = 'p1'"#)
        #expect(link[0, 0] == author[0, 0])
    }

    /// A server that gives up on lock waits (`lock_timeout`, as a database's owner may set
    /// it) fails a save whose row another session holds: the save is tried again after a
    /// pause, as after a deadlock, and ends once the row is free. Before, the run failed.
    @Test(.timeLimit(.minutes(2)))
    func aSaveThatTimesOutOnALockIsTriedAgainUntilTheRowIsFree() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let pipeline = Array(UpdateRuleTests.pipelineText().utf8)
        let first = try dir.write("a.ndjson", Array(#"{"id":"p0","title":"t0","author":{"id":1,"name":"one"}}"#.utf8) + [10])
        _ = try Importer(pipeline: pipeline, options: Importer.Options(feed: first, store: server.url, workers: 1)).run()
        let outside = try PostgresConnection(PostgresURL(server.url))
        try outside.execute("ALTER DATABASE \(try outside.execute("SELECT quote_ident(current_database())").text(0, 0)) SET lock_timeout = '100ms'")
        try outside.execute("BEGIN")
        _ = try outside.execute(#"SELECT 1 FROM "Author" WHERE "id" = 1 FOR UPDATE"#)
        let report = Outcome()
        let done = DispatchSemaphore(value: 0)
        let second = try dir.write("b.ndjson", Array(#"{"id":"p1","title":"t1","author":{"id":1,"name":"renamed"}}"#.utf8) + [10])
        Thread.detachNewThread {
            let result = Result { try Importer(pipeline: pipeline, options: Importer.Options(feed: second, store: server.url, workers: 1)).run() }
            report.value.withLock { $0 = result }
            done.signal()
        }
        // Several of the save's lock waits time out meanwhile.
        usleep(700_000)
        try outside.execute("COMMIT")
        done.wait()
        let imported = try #require(try report.value.withLock { $0 }?.get())
        #expect(imported.records == 1 && imported.rejected == 0)
        #expect((imported.retries ?? 0) > 0, "the save met the held row and was tried again")
        let name = try outside.execute(#"SELECT "name" FROM "Author" WHERE "id" = 1"#)
        #expect(name[0, 0] == "renamed")
    }

    /// Two workers of one process remember what each other's saves wrote (the saves commit
    /// one after another in feed order): authors given again as they were are neither
    /// looked up nor staged and compared on the server, as with one worker. Before, each
    /// worker did that for every author after the other's commit.
    @Test(.timeLimit(.minutes(2)))
    func twoWorkersOfAProcessCompareNoMoreRelatedObjectsOnTheServerThanOne() throws {
        let dir = try TemporaryDirectory()
        let lines = (0..<400).map { #"{"id":"p\#($0)","title":"t","author":{"id":\#($0 % 20),"name":"a\#($0 % 20)"}}"# }
        let feed = try dir.write("posts.ndjson", Array((lines.joined(separator: "\n") + "\n").utf8))
        let pipeline = Array(UpdateRuleTests.pipelineText().utf8)
        var scans: [Int: Int] = [:]
        for workers in [1, 2] {
            let server = try PostgresServer.database()
            let report = try Importer(pipeline: pipeline, options: Importer.Options(feed: feed, store: server.url, workers: workers,
                                                                                   saveEvery: 10, chunkSize: 10)).run()
            #expect(report.records == 400 && report.rejected == 0)
            // The import's sessions have ended, and with them their statistics are in.
            let watcher = try PostgresConnection(PostgresURL(server.url))
            let rows = try watcher.execute(#"SELECT coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE relname = 'Author'"#)
            scans[workers] = try rows.int(0, 0)
            #expect(try watcher.execute(#"SELECT count(*) FROM "Author""#).int(0, 0) == 20)
        }
        let (one, two) = (try #require(scans[1]), try #require(scans[2]))
        #expect(two <= one + 2, "index scans of Author: \(one) with 1 worker, \(two) with 2")
    }

    /// The import's report, from the thread that runs it.
    final class Outcome: Sendable {
        let value = Mutex<Result<ImportReport, any Error>?>(nil)
    }
}
