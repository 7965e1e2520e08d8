import Foundation
import IngestStore
import IngestTestSupport
import Synchronization
import Testing
import IngestPipeline

/// An import beside another writer of the same database (an application, say): a related
/// object the other writer makes between the import's lookup of its key and its insert is
/// found and updated by the import's record, not linked to as it was made; a save that
/// meets `lock_timeout` is tried again.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PostgresOutsideWriterTests {
    /// A store with author 1 (the tables made by a first import), where the import of
    /// `line` runs while another session holds `statement` uncommitted (`hold` after `BEGIN`);
    /// it commits `release` once one of the import's statements that start with `waitsIn`
    /// waits for a lock, or after `after` seconds when `waitsIn` is nil.
    struct Race {
        let server: PostgresServer
        let watcher: PostgresConnection
        let report: ImportReport
        /// Whether the import's statement was seen waiting for the other session.
        let waited: Bool

        init(hold: String, release: String = "COMMIT", line: String, waitsIn: String?, after: Double = 0,
             setUp: (PostgresConnection) throws -> Void = { _ in }) throws {
            server = try PostgresServer.database()
            let dir = try TemporaryDirectory()
            let pipeline = Array(UpdateRuleTests.pipelineText().utf8)
            let first = try dir.write("a.ndjson", Array(#"{"id":"p0","title":"t0","author":{"id":1,"name":"one"}}"#.utf8) + [10])
            _ = try Importer(pipeline: pipeline, options: Importer.Options(feed: first, store: server.url, workers: 1)).run()
            let outside = try PostgresConnection(PostgresURL(server.url))
            try setUp(outside)
            try outside.execute("BEGIN")
            _ = try outside.execute(hold)
            let outcome = Outcome()
            let done = DispatchSemaphore(value: 0)
            let feed = try dir.write("b.ndjson", Array(line.utf8) + [10])
            Thread.detachNewThread { [url = server.url] in
                let result = Result { try Importer(pipeline: pipeline, options: Importer.Options(feed: feed, store: url, workers: 1)).run() }
                outcome.value.withLock { $0 = result }
                done.signal()
            }
            watcher = try PostgresConnection(PostgresURL(server.url))
            var seen = false
            if let waitsIn {
                let deadline = Date(timeIntervalSinceNow: 60)
                while !seen, Date() < deadline, outcome.value.withLock({ $0 == nil }) {
                    // This test's database only: other tests share the server.
                    let rows = try watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND starts_with(query, $1)", [waitsIn])
                    seen = try rows.int(0, 0) > 0
                    if !seen { usleep(10_000) }
                }
            } else {
                usleep(UInt32(after * 1_000_000))
            }
            try outside.execute(release)
            done.wait()
            waited = seen
            report = try #require(try outcome.value.withLock { $0 }?.get())
        }
    }

    /// The other writer inserts author 2 and commits only once the import's insert of the
    /// same key waits for it. Before, the import linked its post to that row and left its
    /// name and email as the other writer made them: the record's values were lost.
    @Test(.timeLimit(.minutes(2)))
    func anAuthorMadeElsewhereDuringTheImportsInsertTakesTheRecordsValues() throws {
        let race = try Race(hold: #"INSERT INTO "Author" ("id", "name", "email") VALUES (2, 'outside', 'outside@example.com')"#,
                            line: #"{"id":"p1","title":"t1","author":{"id":2,"name":"feed","email":"feed@example.com"}}"#,
                            waitsIn: #"INSERT INTO "Author""#)
        #expect(race.waited, "the import's insert never waited for the other writer's row")
        #expect(race.report.records == 1 && race.report.rejected == 0)
        let author = try race.watcher.execute(#"SELECT "_pk", "name", "email" FROM "Author" WHERE "id" = 2"#)
        #expect(author.count == 1)
        #expect(author[0, 1] == "feed" && author[0, 2] == "feed@example.com", "the record's values, as if it came after the other writer")
        #expect(try race.watcher.execute(#"SELECT "_author" FROM "Post" WHERE "id" = 'p1'"#)[0, 0] == author[0, 0])
    }

    /// The same race when the import's record only names the author (by key): the post
    /// links to the other writer's row, which keeps its values and is no placeholder.
    @Test(.timeLimit(.minutes(2)))
    func anAuthorOnlyNamedByTheRecordAndMadeElsewhereMeanwhileIsLinkedAsItWasMade() throws {
        let race = try Race(hold: #"INSERT INTO "Author" ("id", "name") VALUES (3, 'outside')"#,
                            line: #"{"id":"p2","title":"t2","author":3}"#, waitsIn: #"INSERT INTO "Author""#)
        #expect(race.waited, "the import's insert never waited for the other writer's row")
        #expect(race.report.records == 1 && race.report.rejected == 0)
        let author = try race.watcher.execute(#"SELECT "_pk", "name", "_placeholder" FROM "Author" WHERE "id" = 3"#)
        #expect(author.count == 1)
        #expect(author[0, 1] == "outside" && author[0, 2] == nil, "the other writer's row, as it made it")
        #expect(try race.watcher.execute(#"SELECT "_author" FROM "Post" WHERE "id" = 'p2'"#)[0, 0] == author[0, 0])
    }

    /// A server that gives up on lock waits (`lock_timeout`, as a database's owner may set
    /// it) fails a save whose row another session holds: the save is tried again after a
    /// pause, as after a deadlock, and ends once the row is free. Before, the run failed.
    @Test(.timeLimit(.minutes(2)))
    func aSaveThatTimesOutOnALockIsTriedAgainUntilTheRowIsFree() throws {
        // Several of the save's lock waits time out before the row is free.
        let race = try Race(hold: #"SELECT 1 FROM "Author" WHERE "id" = 1 FOR UPDATE"#,
                            line: #"{"id":"p1","title":"t1","author":{"id":1,"name":"renamed"}}"#, waitsIn: nil, after: 0.7) { outside in
            let database = try outside.execute("SELECT quote_ident(current_database())").text(0, 0)
            try outside.execute("ALTER DATABASE \(database) SET lock_timeout = '100ms'")
        }
        #expect(race.report.records == 1 && race.report.rejected == 0)
        #expect((race.report.retries ?? 0) > 0, "the save met the held row and was tried again")
        #expect(try race.watcher.execute(#"SELECT "name" FROM "Author" WHERE "id" = 1"#)[0, 0] == "renamed")
    }

    /// The import's report, from the thread that runs it.
    final class Outcome: Sendable {
        let value = Mutex<Result<ImportReport, any Error>?>(nil)
    }
}
