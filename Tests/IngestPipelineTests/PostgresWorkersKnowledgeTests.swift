import Foundation
import IngestStore
import IngestTestSupport
import Testing
import IngestPipeline

/// What the PostgreSQL writers of one process's workers remember of stored objects is
/// shared (`PostgresKnownObjects`): a run's saves commit one after another in feed order.
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
}
