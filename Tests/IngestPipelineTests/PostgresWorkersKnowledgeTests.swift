import Foundation
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// What the PostgreSQL writers of one process's workers remember of stored objects is
/// shared (`PostgresKnownObjects`): a run's saves commit one after another in feed order.
/// Across processes, a save after another process's forgets only the objects the history
/// says that process changed.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PostgresWorkersKnowledgeTests {
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

    /// Two processes of one worker each, 200 chunks: a save after the other process's forgets
    /// only the authors the history says it changed (none here), so the second process only
    /// learns the authors once (45 scans of Author with one process, 56–67 with two). Before,
    /// it forgot every author's fields at each turn, and staged and compared them on the
    /// server (260).
    @Test(.timeLimit(.minutes(2)))
    func aSaveAfterAnotherProcesssForgetsOnlyWhatTheHistorySaysItChanged() throws {
        let dir = try TemporaryDirectory()
        let lines = (0..<2_000).map { #"{"id":"p\#($0)","title":"t","author":{"id":\#($0 % 20),"name":"a\#($0 % 20)"}}"# }
        let feed = try dir.write("posts.ndjson", Array((lines.joined(separator: "\n") + "\n").utf8))
        let pipeline = Array(UpdateRuleTests.pipelineText().utf8)
        var scans: [Int: Int] = [:]
        for processes in [1, 2] {
            let server = try PostgresServer.database()
            let options = PostgresImportOptions(workers: 1, saveEvery: 10, chunkSize: 10)
            let done = try PostgresJoins.importRun(feed, pipeline: pipeline, url: server.url, options: options, processes: processes)
                .map { $0.report?.chunks ?? -1 }
            #expect(done.count == processes && done.allSatisfy { $0 > 0 } && done.reduce(0, +) == 200, "chunks by process: \(done)")
            let watcher = try PostgresConnection(PostgresURL(server.url))
            scans[processes] = try watcher.execute(#"SELECT coalesce(idx_scan, 0) + coalesce(seq_scan, 0) FROM pg_stat_user_tables WHERE relname = 'Author'"#).int(0, 0)
            #expect(try watcher.execute(#"SELECT count(*) FROM "Post""#).int(0, 0) == 2_000)
        }
        let (one, two) = (try #require(scans[1]), try #require(scans[2]))
        // The second process learns the 20 authors once; forgetting them at each turn cost 260 scans.
        #expect(two <= 2 * one, "scans of Author: \(one) with 1 process, \(two) with 2")
    }

    /// Two processes, 60 chunks of three records, each naming authors 1, 2 and 3 by a name
    /// that goes round "a", "b" for author 1, "a" to "c" for 2 and "a" to "e" for 3: every
    /// chunk changes every author, whichever process saves it. A process that wrote a name
    /// some chunks before, with the other's chunks between, may now give that name again
    /// (after 1, 3, 5… chunks for author 1; 2, 5… for author 2; 4, 9… for 3): the history
    /// says the other process changed the author, so it is written, not taken as this
    /// process last wrote it. Every chunk after the first is then one update of all three
    /// in the history.
    @Test(.timeLimit(.minutes(2)))
    func anObjectAnotherProcessChangedIsWrittenAgainWhenGivenAsThisProcessLastWroteIt() throws {
        let dir = try TemporaryDirectory()
        let periods = [2, 3, 5]
        let lines = (0..<60).flatMap { chunk in
            periods.indices.map { author in
                #"{"id":"p\#(chunk)-\#(author)","author":{"id":\#(author + 1),"name":"\#(["a", "b", "c", "d", "e"][chunk % periods[author]])"}}"#
            }
        }
        let feed = try dir.write("posts.ndjson", Array((lines.joined(separator: "\n") + "\n").utf8))
        let server = try PostgresServer.database()
        let options = PostgresImportOptions(workers: 1, saveEvery: 3, chunkSize: 3)
        let done = try PostgresJoins.importRun(feed, pipeline: Array(UpdateRuleTests.pipelineText().utf8), url: server.url, options: options, processes: 2)
            .map { $0.report?.chunks ?? -1 }
        #expect(done.count == 2 && done.allSatisfy { $0 > 0 } && done.reduce(0, +) == 60, "chunks by process: \(done)")
        let watcher = try PostgresConnection(PostgresURL(server.url))
        let names = try watcher.execute(#"SELECT "name" FROM "Author" ORDER BY "id""#)
        #expect((0..<names.count).map { names[$0, 0] ?? "" } == ["b", "c", "e"], "chunk 59's names")
        let updates = try watcher.execute("SELECT rows FROM _ingest_history_changes WHERE entity = 'Author' AND kind = 'update'")
        let lists = (0..<updates.count).map { updates[$0, 0] ?? "" }
        #expect(lists.count == 59 && Set(lists).count == 1, "each chunk after the first updates all three authors: \(lists)")
    }
}
