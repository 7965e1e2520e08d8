import Foundation
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// A record whose value breaks its attribute's rules (`AttributeRules`) goes to the rejects
/// with the rule's reason, on the batch path and the object path, on SQLite and PostgreSQL;
/// the feed's other records are stored.
@Suite struct ValidationRejectTests {
    /// Books whose title is at most 10 characters; `onConflict` `reject` makes PostgreSQL
    /// take the object path (the batch path cannot weigh that rule).
    static func pipeline(onConflict: String = "update") -> String {
        """
        { "model": { "entities": [
            { "name": "Book", "attributes": [
                { "name": "id", "type": "string", "optional": false },
                { "name": "title", "type": "string", "maxLength": 10 },
                { "name": "pages", "type": "int64", "min": 1 } ],
              "unique": [["id"]] } ] },
          "feed": { "ndjson": true },
          "record": "Book",
          "mappings": { "Book": { "onConflict": "\(onConflict)", "attributes": { "id": "id", "title": "title", "pages": "pages" } } } }
        """
    }

    static let feed = """
        {"id":"b1","title":"Short","pages":10}
        {"id":"b2","title":"Far too long a title","pages":20}
        {"id":"b3","title":"Fine","pages":30}

        """

    static let reason = #"Book "b2": title: is 20 characters long, more than the maximum length 10"#

    static func reasons(_ lines: [String]) throws -> [String] {
        try lines.map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            return "\(object["index"]!) \(object["reason"]!)"
        }
    }

    @Test(arguments: [false, true])
    func aRecordBreakingAMaximumLengthIsRejectedOnSQLite(objectPath: Bool) throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.ndjson", Array(Self.feed.utf8))
        var options = Importer.Options(feed: feed, store: dir.file("store.sqlite"), workers: 1, saveEvery: 100, chunkSize: 100)
        options.objectPath = objectPath
        let report = try Importer(spec: try PipelineSpec.parse(Array(Self.pipeline().utf8)), options: options).run()
        #expect(report.imported == 2 && report.rejectedThisRun == 1)
        let lines = try String(contentsOfFile: report.rejectsFile, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(try Self.reasons(lines) == ["1 \(Self.reason)"])
        #expect(try storeRows(dir.file("store.sqlite"), "SELECT id || ' ' || title FROM Book ORDER BY id") == ["b1 Short", "b3 Fine"])
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")),
          arguments: ["update", "reject"])
    func aRecordBreakingAMaximumLengthIsRejectedOnPostgreSQL(onConflict: String) throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.ndjson", Array(Self.feed.utf8))
        let report = try Importer(pipeline: Array(Self.pipeline(onConflict: onConflict).utf8),
                                  options: Importer.Options(feed: feed, store: server.url, workers: 1, saveEvery: 100, chunkSize: 100)).run()
        #expect(report.imported == 2 && report.rejectedThisRun == 1)
        let status = try PostgresStatus.read(url: try PostgresURL(server.url))
        #expect(try Self.reasons(status.rejects) == ["1 \(Self.reason)"])
        let spec = try PipelineSpec.parse(Array(Self.pipeline().utf8))
        #expect(try PostgresImportTests.postgresRows(server.url, spec.model.storedForm)["Book"] == ["b1|Short|10", "b3|Fine|30"])
    }
}
