import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// Feeds with broken parts, and what the summary and status say of them. With
/// `"feed": {"ndjson": true, "malformedLines": "reject"}` a malformed line is a rejected
/// record (its chunk, index, line, column and text in the rejects file), the import goes
/// on, and the summary counts it.
@Suite struct BrokenFeedImportTests {
    static func pipeline(_ malformedLines: String, ndjson: Bool = true) -> String {
        """
        { "model": { "entities": [ { "name": "T", "attributes": [ { "name": "id", "type": "int64", "optional": false },
                                                                 { "name": "v", "type": "string" } ], "unique": [["id"]] } ] },
          "feed": { "ndjson": \(ndjson), "malformedLines": "\(malformedLines)" }, "record": "T",
          "mappings": { "T": { "attributes": { "id": "id", "v": "v" } } } }
        """
    }

    @Test(arguments: [1, 2])
    func malformedLinesAreRejectedAndTheRestImported(workers: Int) throws {
        let dir = try TemporaryDirectory()
        var lines = (1...40).map { #"{"id":\#($0),"v":"v\#($0)"}"# }
        lines[9] = #"{"id":10,"v":"#
        lines[24] = "not json"
        let feed = try dir.write("feed.ndjson", Array((lines.joined(separator: "\n") + "\n").utf8))
        let spec = try PipelineSpec.parse(Array(Self.pipeline("reject").utf8))
        let report = try Importer(spec: spec, options: Importer.Options(feed: feed, store: dir.file("store.sqlite"), workers: workers,
                                                                        saveEvery: 5, chunkSize: 8)).run()
        #expect(report.imported == 38 && report.rejected == 2)
        #expect(try storeRows(dir.file("store.sqlite"), "SELECT count(*), sum(id) FROM T") == ["38|\(820 - 10 - 25)"])
        let rejects = try String(contentsOfFile: report.rejectsFile, encoding: .utf8).split(separator: "\n").map { line in
            try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
        }
        #expect(rejects.map { "\($0["chunk"]!) \($0["index"]!) \($0["reason"]!)" } == [
            "2 1 malformed line 10, column 1 (byte 162): the line ends inside record 10 (NDJSON holds one value per line)",
            "4 0 malformed line 25, column 1 (byte 456): malformed JSON: invalid literal (JSON's literals are true, false and null)",
        ])
        #expect((rejects[1]["text"] as? String)?.contains(#""@line":"not json""#) == true)
    }

    @Test func onlyNDJSONLinesCanBeRejectedOneByOne() throws {
        #expect(throws: PipelineError.self) { try PipelineSpec.parse(Array(Self.pipeline("reject", ndjson: false).utf8)) }
        #expect(throws: PipelineError.self) { try PipelineSpec.parse(Array(Self.pipeline("skip").utf8)) }
    }

    /// A top-level array cut short stops the run, but only after every chunk before the break
    /// is imported: each try, and each resume, commits the same records, and status says to
    /// fix the feed rather than resume.
    @Test func aTruncatedArrayCommitsEveryChunkBeforeTheBreakOnEveryTry() throws {
        let dir = try TemporaryDirectory()
        let records = (1...95).map { #"{"id":\#($0),"v":"v\#($0)"}"# }.joined(separator: ",\n")
        let text = "[" + records
        let feed = try dir.write("feed.json", Array(text.prefix(text.count - 5).utf8))
        let pipeline = Self.pipeline("stop").replacingOccurrences(of: #""ndjson": true, "#, with: #""ndjson": false, "#)
        let spec = try PipelineSpec.parse(Array(pipeline.utf8))
        for attempt in 0..<3 {
            let store = dir.file("store\(attempt == 2 ? 1 : attempt).sqlite")
            let options = Importer.Options(feed: feed, store: store, workers: 2, saveEvery: 3, chunkSize: 10)
            #expect(throws: FeedError.self) { try Importer(spec: spec, options: options).run() }
            // 94 records are whole before the break: the 9 chunks of 10 before it are imported, each time.
            #expect(try storeRows(store, "SELECT count(*), max(id) FROM T") == ["90|90"], "attempt \(attempt)")
        }
        let status = try ImportStatus.read(store: dir.file("store1.sqlite"))
        #expect(status.latest.feedError?.contains("truncated input") == true, "\(String(describing: status.latest.feedError))")
    }

    /// The summary's "rejected in all runs" is the rejects file's line count, which holds every run's rejects.
    @Test func theReportCountsEveryRunsRejectsAsTheFileListsThem() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.ndjson", Array("{\"id\":1}\nnope\n{\"id\":2}\n".utf8))
        let spec = try PipelineSpec.parse(Array(Self.pipeline("reject").utf8))
        var options = Importer.Options(feed: feed, store: dir.file("store.sqlite"), workers: 1, saveEvery: 5, chunkSize: 8)
        _ = try Importer(spec: spec, options: options).run()
        options.again = true
        let second = try Importer(spec: spec, options: options).run()
        let lines = try String(contentsOfFile: second.rejectsFile, encoding: .utf8).split(separator: "\n").count
        #expect(second.rejectedThisRun == 1 && second.rejected == 2 && lines == 2)
    }

    /// Status names a run's feed and pipeline without `.` or `..` components.
    @Test func statusNamesTheFeedByANormalisedPath() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.ndjson", Array("{\"id\":1}\n".utf8))
        try FileManager.default.createDirectory(atPath: dir.file("sub"), withIntermediateDirectories: true)
        let spec = try PipelineSpec.parse(Array(Self.pipeline("reject").utf8))
        let roundabout = dir.file("sub") + "/./../" + (feed as NSString).lastPathComponent
        _ = try Importer(spec: spec, options: Importer.Options(feed: roundabout, store: dir.file("store.sqlite"))).run()
        #expect(try ImportStatus.read(store: dir.file("store.sqlite")).latest.feed == URL(fileURLWithPath: feed).standardized.path)
    }
}

/// On PostgreSQL too, a feed cut short stops the run only after every chunk before the
/// break is imported, by every worker: two tries into two databases store the same records.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PostgresBrokenFeedTests {
    @Test func aTruncatedArrayCommitsEveryChunkBeforeTheBreakOnEveryTry() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let records = (1...95).map { #"{"id":\#($0),"v":"v\#($0)"}"# }.joined(separator: ",\n")
        let text = "[" + records
        let feed = try dir.write("feed.json", Array(text.prefix(text.count - 5).utf8))
        let pipeline = try dir.write("pipeline.json", Array(BrokenFeedImportTests.pipeline("stop")
            .replacingOccurrences(of: #""ndjson": true, "#, with: #""ndjson": false, "#).utf8))
        for attempt in 0..<2 {
            let url = try server.createDatabase("truncated\(attempt)")
            let outcome = try IngestBinary.run(["import", feed, "--pipeline", pipeline, "--store", url, "--workers", "2",
                                                "--chunk-size", "10", "--save-every", "3"])
            #expect(outcome.status == 1 && outcome.stderr.contains("truncated input"), "\(outcome.stderr)")
            let store = try PostgresStore(url: try PostgresURL(url), model: try PipelineSpec.parse(Array(try String(contentsOfFile: pipeline, encoding: .utf8).utf8)).model)
            let connection = try store.connect()
            let count = try connection.execute(#"SELECT count(*) FROM "T""#)[0, 0]
            #expect(count == "90", "attempt \(attempt): \(count ?? "nil"); \(outcome.stderr)")
        }
    }
}
