import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// Dates on the command line: `--where` takes ISO 8601 literals and CAST as NSPredicate
/// does, SQL and in-memory evaluation agree, and output shows what is stored, rounded.
@Suite struct QueryDateTests {
    static let pipeline = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path

    func store() throws -> (TemporaryDirectory, String) {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.json", Array("""
            [{"id":"early","uploadDate":"2001-02-28T23:59:59Z"},
             {"id":"march","uploadDate":"2001-03-01T00:00:00Z"},
             {"id":"millis","uploadDate":1517966773.84},
             {"id":"none"}]
            """.utf8))
        let store = dir.file("store.sqlite")
        _ = try Importer(spec: try PipelineSpec.load(path: Self.pipeline), options: .init(feed: feed, store: store)).run()
        return (dir, store)
    }

    @Test(arguments: [
        ("uploadDate >= '2001-03-01T00:00:00Z'", ["march", "millis"]),
        ("uploadDate < '2001-03-01'", ["early"]),
        ("uploadDate >= CAST('2001-03-01T00:00:00Z', 'NSDate')", ["march", "millis"]),
        ("uploadDate == CAST(5000000, 'NSDate')", []),
        ("uploadDate BETWEEN {'2001-01-01T00:00:00+01:00', '2001-03-01T00:00:00.000Z'}", ["early", "march"]),
    ])
    func dateLiteralsCompareAsDatesInSQLAndInMemory(_ format: String, _ expected: [String]) throws {
        let (dir, store) = try store()
        defer { withExtendedLifetime(dir) {} }
        let predicate = try QueryPredicate(format: format)
        let context = ObjectContext(coordinator: try PersistentStoreCoordinator(existingStoreAt: store))
        let (viaSQL, inMemory) = try context.performAndWait {
            let sql = try context.fetch(FetchRequest("Photo", predicate: predicate)).compactMap { $0["id"]?.stringValue }.sorted()
            let memory = try context.fetch("Photo").filter { try predicate.evaluate(with: $0) }.compactMap { $0["id"]?.stringValue }.sorted()
            return (sql, memory)
        }
        #expect(viaSQL == expected)
        #expect(inMemory == expected)
    }

    @Test func outputShowsTheStoredDateRoundedNotCut() throws {
        let (dir, store) = try store()
        defer { withExtendedLifetime(dir) {} }
        let outcome = try IngestBinary.run(["query", store, "Photo", "--where", "id = 'millis'", "--fields", "uploadDate", "--format", "csv"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("2018-02-07T01:26:13.840Z"), "\(outcome.stdout)")
        let bad = try IngestBinary.run(["query", store, "Photo", "--where", "uploadDate > CAST('yesterday', 'NSDate')"])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("'yesterday' is not an ISO 8601 date"), "\(bad.stderr)")
    }

    /// A store written before dates had a range (or by hand) may hold any double: `query`
    /// prints each one, and the importer now rejects such values with the range.
    @Test func queryPrintsEveryStoredDoubleAndImportRejectsDatesOutsideTheRange() throws {
        let (dir, store) = try store()
        defer { withExtendedLifetime(dir) {} }
        let far: [(Double, String)] = [(1e13 - 978_307_200, "+318857-05-20T17:46:40.000Z"), (1e300, "1e+300 s since 1970-01-01T00:00:00Z"),
                                       (-1e300, "-1e+300 s since 1970-01-01T00:00:00Z"),
                                       (Double(Int64.max), "9.223372037833083e+18 s since 1970-01-01T00:00:00Z"),
                                       (-31_574_232_000, "1000-06-15T12:00:00.000Z")]
        for (index, (seconds, _)) in far.enumerated() {
            try storeRowsExecute(store, "INSERT INTO Photo (_pk, id, uploadDate) VALUES (\(100 + index), 'far\(index)', \(seconds))")
        }
        let outcome = try IngestBinary.run(["query", store, "Photo", "--where", "id BEGINSWITH 'far'", "--sort", "id", "--fields", "uploadDate", "--format", "csv"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout == "uploadDate\r\n" + far.map { $0.1 + "\r\n" }.joined(), "\(outcome.stdout)")

        let feed = try dir.write("far.json", Array(#"[{"id":"x","uploadDate":10000000000000},{"id":"y","uploadDate":"1000-06-15T12:00:00Z"}]"#.utf8))
        let report = try Importer(spec: try PipelineSpec.load(path: Self.pipeline), options: .init(feed: feed, store: store)).run()
        #expect(report.rejectedThisRun == 1)
        let rejects = try String(contentsOfFile: report.rejectsFile, encoding: .utf8)
        #expect(rejects.contains(#""reason":"uploadDate: 10000000000000 is outside the dates a store holds (0001-01-01 to 9999-12-31 UTC)""#), "\(rejects)")
        let printed = try IngestBinary.run(["query", store, "Photo", "--where", "id = 'y'", "--fields", "uploadDate", "--format", "csv"])
        #expect(printed.stdout == "uploadDate\r\n1000-06-15T12:00:00.000Z\r\n")
    }

    @Test func tableColumnsLineUpWithWideCharacters() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.json", Array(#"[{"id":"a","title":"東京タワー"},{"id":"b","title":"café"},{"id":"c","title":"👍 ok"}]"#.utf8))
        let store = dir.file("store.sqlite")
        _ = try Importer(spec: try PipelineSpec.load(path: Self.pipeline), options: .init(feed: feed, store: store)).run()
        let outcome = try IngestBinary.run(["query", store, "Photo", "--fields", "title,id", "--sort", "id", "--format", "table"])
        #expect(outcome.stdout == """
            | title      | id |
            |------------|----|
            | 東京タワー | a  |
            | café       | b  |
            | 👍 ok      | c  |
            (3 rows)

            """, "\(outcome.stdout)")
    }

    @Test func tableCellsShowANewlineAsBackslashNAndStillLineUp() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.json", Array(#"[{"id":"a","title":"one\ntwo"},{"id":"b","title":"plain"},{"id":"c","title":"x\u0007y"}]"#.utf8))
        let store = dir.file("store.sqlite")
        _ = try Importer(spec: try PipelineSpec.load(path: Self.pipeline), options: .init(feed: feed, store: store)).run()
        let outcome = try IngestBinary.run(["query", store, "Photo", "--fields", "title,id", "--sort", "id", "--format", "table"])
        // The bell takes no column, as a terminal shows it.
        #expect(outcome.stdout == """
            | title    | id |
            |----------|----|
            | one\\ntwo | a  |
            | plain    | b  |
            | x\u{7}y       | c  |
            (3 rows)

            """, "\(outcome.stdout)")
    }

    @Test func fieldsTakeAggregatesOverToManyKeyPaths() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 40).write(to: feed)
        let store = dir.file("store.sqlite")
        _ = try Importer(spec: try PipelineSpec.load(path: Self.pipeline), options: .init(feed: feed, store: store)).run()
        let outcome = try IngestBinary.run(["query", store, "Photographer", "--fields", "id,photos.@count,photos.@max.views",
                                            "--format", "json"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let rows = try JSONValue.parse(Array(outcome.stdout.utf8))
        guard case .array(let items) = rows else { Issue.record("not an array"); return }
        let total = items.reduce(0) { sum, row in { if case .number(let n)? = row["photos.@count"] { return sum + (Int(n) ?? 0) } else { return sum } }() }
        #expect(total == 40, "every photo counted once under its photographer")
    }
}
