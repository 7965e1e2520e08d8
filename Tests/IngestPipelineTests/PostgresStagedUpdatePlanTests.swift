import Foundation
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// How the server runs the PostgreSQL writer's statements, read from its statistics.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PostgresStagedUpdatePlanTests {
    /// Stored authors given again with other names are staged and updated by one join per
    /// save: it probes the table's index once a staged row. The planner, taking the
    /// temporary staging table for 720 rows, hashed the whole table instead, a scan of
    /// every author at every save (2.5–4.7 ms a save with 10,000 photographers).
    @Test func aSavesStagedUpdatesProbeTheIndexInsteadOfScanningTheTable() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let first = (0..<3_000).map { #"{"id":"p\#($0)","author":{"id":\#($0),"name":"n\#($0)"}}"# }
        let second = stride(from: 0, to: 3_000, by: 30).map { #"{"id":"q\#($0)","author":{"id":\#($0),"name":"renamed \#($0)"}}"# }
        let pipeline = UpdateRuleTests.pipelineText()
        let feeds = try [first, second].enumerated().map { run, lines in
            try dir.write("run-\(run).ndjson", Array((lines.joined(separator: "\n") + "\n").utf8))
        }
        let options = PostgresImportOptions(workers: 1, saveEvery: 10, chunkSize: 50)
        let watcher = try PostgresConnection(PostgresURL(server.url))
        var scans: [Int] = []
        for feed in feeds {
            let started = try PostgresImport.start(feed: feed, pipeline: Array(pipeline.utf8), url: try PostgresURL(server.url), options: options)
            _ = try PostgresJoin(url: try PostgresURL(server.url), options: options).run(run: started.run)
            // Statistics as autovacuum would make them in time: without them the planner may
            // scan the table for the lookups of keys too, as often as not.
            try watcher.execute(#"ANALYZE "Author""#)
            // The import's sessions have ended, and with them their statistics are in.
            scans.append(try watcher.execute(#"SELECT coalesce(seq_scan, 0) FROM pg_stat_user_tables WHERE relname = 'Author'"#).int(0, 0))
        }
        let renamed = try watcher.execute(#"SELECT count(*) FROM "Author" WHERE "name" LIKE 'renamed %'"#).int(0, 0)
        #expect(renamed == 100, "every staged author updated")
        // The second run's ten saves staged ten authors each.
        #expect(scans[1] == scans[0], "scans of Author: \(scans[0]) after the first run, \(scans[1]) after the second")
    }
}
