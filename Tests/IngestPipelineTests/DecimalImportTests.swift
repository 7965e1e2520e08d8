import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// Decimals a feed gives are numbers on both backends and both write paths: they sort and
/// compare by number, keep every digit, and a record that writes a stored decimal another
/// way (`7.800000` for `7.8`) changes nothing: it counts unchanged and `reject` accepts it.
@Suite struct DecimalImportTests {
    static let thirty = "123456789012345678901234567890"

    /// Quakes keyed by id (the batch path), or by id and network (the object path).
    static func pipeline(rule: String = "update", compositeKey: Bool = false) -> String {
        """
        { "model": { "entities": [ { "name": "Quake", "attributes": [
            { "name": "id", "type": "string", "optional": false }, { "name": "net", "type": "string", "optional": false },
            { "name": "mag", "type": "decimal" }, { "name": "depth", "type": "decimal", "indexed": true } ],
          "unique": [\(compositeKey ? #"["id", "net"]"# : #"["id"]"#)] } ] },
          "feed": { "ndjson": true }, "record": "Quake",
          "mappings": { "Quake": { "onConflict": "\(rule)", "attributes": { "id": "id", "net": "net", "mag": "mag", "depth": "depth" } } } }
        """
    }

    static let first = """
        {"id":"q1","net":"us","mag":10.50,"depth":"10.50"}
        {"id":"q2","net":"us","mag":"9.250","depth":9.25}
        {"id":"q3","net":"us","mag":1E2,"depth":"100"}
        {"id":"q4","net":"us","mag":-1.0,"depth":"-1"}
        {"id":"q5","net":"us","mag":\(thirty),"depth":"\(thirty)"}
        {"id":"q6","net":"us","mag":0.1,"depth":"0.10"}
        {"id":"q7","net":"us","mag":7.800000,"depth":7.800000}

        """

    /// The same numbers, each written another way.
    static let again = """
        {"id":"q1","net":"us","mag":"10.5","depth":10.500000}
        {"id":"q2","net":"us","mag":9.25,"depth":"+9.2500"}
        {"id":"q3","net":"us","mag":"100.000","depth":1e2}
        {"id":"q4","net":"us","mag":"-1","depth":-10e-1}
        {"id":"q5","net":"us","mag":"1234567890123456789012345678.9e2","depth":\(thirty).000}
        {"id":"q6","net":"us","mag":"1e-1","depth":0.1}
        {"id":"q7","net":"us","mag":7.8,"depth":"78E-1"}

        """

    static let ascending = ["-1", "0.1", "7.8", "9.25", "10.5", "100", thirty]

    /// The store read through the object graph: each key's values in order, and the ids
    /// each predicate selects.
    static func check(_ store: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let context = ObjectContext(coordinator: try PersistentStoreCoordinator(existingStoreAt: store, readOnly: true))
        try context.performAndWait {
            for key in ["mag", "depth"] {
                let sorted = try context.fetch(FetchRequest("Quake", sortDescriptors: [FetchSortDescriptor(key)]))
                #expect(sorted.map { $0[key]?.description } == ascending, "\(key)", sourceLocation: sourceLocation)
                let above = try context.fetch(FetchRequest("Quake", predicate: try QueryPredicate(format: "\(key) > 9")))
                #expect(Set(above.compactMap { $0.id?.stringValue }) == ["q1", "q2", "q3", "q5"], "\(key) > 9", sourceLocation: sourceLocation)
            }
        }
    }

    func importSQLite(_ text: String, pipeline: String, dir: TemporaryDirectory, objectPath: Bool) throws -> ImportReport {
        let feed = try dir.write("feed-\(UUID().uuidString).ndjson", Array(text.utf8))
        var options = Importer.Options(feed: feed, store: dir.file("store.sqlite"), workers: 1, saveEvery: 3, chunkSize: 4)
        options.objectPath = objectPath
        return try Importer(spec: try PipelineSpec.parse(Array(pipeline.utf8)), options: options).run()
    }

    @Test(arguments: [false, true])
    func decimalsImportAsNumbersOnSQLite(objectPath: Bool) throws {
        for rule in ["update", "reject"] {
            let dir = try TemporaryDirectory()
            let pipeline = Self.pipeline(rule: rule)
            let made = try importSQLite(Self.first, pipeline: pipeline, dir: dir, objectPath: objectPath)
            #expect(made.outcomes == RecordOutcomes(inserted: 7) && made.rejected == 0)
            try Self.check(dir.file("store.sqlite"))
            let again = try importSQLite(Self.again, pipeline: pipeline, dir: dir, objectPath: objectPath)
            #expect(again.outcomes == RecordOutcomes(unchanged: 7), "\(rule)")
            #expect(again.rejectedThisRun == 0, "\(rule): \((try? String(contentsOfFile: again.rejectsFile, encoding: .utf8)) ?? "")")
            try Self.check(dir.file("store.sqlite"))
        }
    }

    static let pricePipeline = """
        { "model": { "entities": [ { "name": "Price", "attributes": [
            { "name": "amount", "type": "decimal", "optional": false }, { "name": "label", "type": "string" } ], "unique": [["amount"]] } ] },
          "feed": { "ndjson": true }, "record": "Price", "mappings": { "Price": { "attributes": { "amount": "amount", "label": "label" } } } }
        """
    static let prices = [
        #"{"amount":7.800000,"label":"a"}"# + "\n" + #"{"amount":"1E2","label":"b"}"# + "\n" + #"{"amount":"7.80","label":"a"}"# + "\n",
        #"{"amount":7.8,"label":"a"}"# + "\n" + #"{"amount":100.0,"label":"c"}"# + "\n",
    ]

    /// A decimal key finds its object however a record writes it: one object per number.
    @Test(arguments: [false, true])
    func aDecimalKeyFindsItsObjectWrittenAnyWayOnSQLite(objectPath: Bool) throws {
        let dir = try TemporaryDirectory()
        let first = try importSQLite(Self.prices[0], pipeline: Self.pricePipeline, dir: dir, objectPath: objectPath)
        #expect(first.outcomes == RecordOutcomes(inserted: 2, unchanged: 1, duplicates: 1))
        let again = try importSQLite(Self.prices[1], pipeline: Self.pricePipeline, dir: dir, objectPath: objectPath)
        #expect(again.outcomes == RecordOutcomes(updated: 1, unchanged: 1))
        #expect(try storeRows(dir.file("store.sqlite"), "SELECT amount, label FROM Price ORDER BY _pk") == ["7.8|a", "100|c"])
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aDecimalKeyFindsItsObjectWrittenAnyWayOnPostgreSQL() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let feeds = try Self.prices.enumerated().map { try dir.write("prices\($0).ndjson", Array($1.utf8)) }
        let stores = try PostgresImportTests.importBoth(feeds, pipeline: Self.pricePipeline, url: try server.createDatabase("prices"), dir: dir)
        #expect(stores.postgres == stores.sqlite)
        #expect(stores.postgres["Price"] == ["100|c", "7.8|a"])
        #expect(stores.joins[0].outcomes == RecordOutcomes(inserted: 2, unchanged: 1, duplicates: 1))
        #expect(stores.joins[1].outcomes == RecordOutcomes(updated: 1, unchanged: 1))
    }

    /// `ingest query` prints decimals as the stores keep them, sorted and selected by number.
    @Test func queryPrintsDecimalsCanonicalSortedAndSelectedByNumber() throws {
        let dir = try TemporaryDirectory()
        _ = try importSQLite(Self.first, pipeline: Self.pipeline(), dir: dir, objectPath: false)
        let sorted = try IngestBinary.run(["query", dir.file("store.sqlite"), "Quake", "--sort", "mag", "--fields", "mag", "--format", "csv"])
        #expect(sorted.stdout == (["mag"] + Self.ascending).map { $0 + "\r\n" }.joined(), "\(sorted.stderr)")
        let above = try IngestBinary.run(["query", dir.file("store.sqlite"), "Quake", "--where", "mag > 9", "--sort", "mag:desc",
                                          "--fields", "id,mag", "--format", "json"])
        #expect(above.stdout == #"[{"id":"q5","mag":\#(Self.thirty)},"# + "\n "
                + #"{"id":"q3","mag":100},"# + "\n " + #"{"id":"q1","mag":10.5},"# + "\n " + #"{"id":"q2","mag":9.25}]"# + "\n",
                "\(above.stderr)")
        let exact = try IngestBinary.run(["query", dir.file("store.sqlite"), "Quake", "--where", "mag == \(Self.thirty)", "--count"])
        #expect(exact.stdout == "1\n", "\(exact.stderr)")
    }

    /// New rows reach PostgreSQL's `numeric` columns in COPY's binary form (base-10000
    /// digits, weight, scale), made from the canonical text: every digit arrives, at every
    /// place around the point, as SQLite keeps it.
    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func everyDecimalReachesPostgreSQLThroughTheBinaryCopyAsOnSQLite() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let values: [(String, String)] = [
            ("0", "0"), ("-0.0", "0"), ("0.0001", "0.0001"), ("0.00001", "0.00001"), ("0.000123456789", "0.000123456789"),
            ("10000", "10000"), ("100000000", "100000000"), ("123456789", "123456789"), ("-123456789.987654321", "-123456789.987654321"),
            ("99999999.99999999", "99999999.99999999"), ("-0.5", "-0.5"), ("1234.5678", "1234.5678"), ("\"1e-400\"", "0." + String(repeating: "0", count: 399) + "1"),
            ("1e400", "1" + String(repeating: "0", count: 400)), (Self.thirty + ".000000000000000000000000000001", Self.thirty + ".000000000000000000000000000001"),
        ]
        let pipeline = """
            { "model": { "entities": [ { "name": "N", "attributes": [
                { "name": "id", "type": "int64", "optional": false }, { "name": "d", "type": "decimal" } ], "unique": [["id"]] } ] },
              "feed": { "ndjson": true }, "record": "N", "mappings": { "N": { "attributes": { "id": "id", "d": "d" } } } }
            """
        let feed = try dir.write("n.ndjson", Array(values.enumerated().map { #"{"id":\#($0),"d":\#($1.0)}"# + "\n" }.joined().utf8))
        let stores = try PostgresImportTests.importBoth([feed], pipeline: pipeline, url: try server.createDatabase("binary_numeric"), dir: dir)
        #expect(stores.joins[0].rejected == 0 && stores.joins[0].outcomes == RecordOutcomes(inserted: values.count))
        #expect(stores.postgres["N"] == stores.sqlite["N"])
        #expect(stores.postgres["N"] == values.enumerated().map { "\($0)|\($1.1)" }.sorted())
    }

    /// On PostgreSQL (`numeric` columns), through the batch path (a key of one attribute,
    /// `update`) and the object path (a key of two, or `reject`): as on SQLite, row for row.
    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")),
          arguments: [false, true])
    func decimalsImportAsNumbersOnPostgreSQL(compositeKey: Bool) throws {
        let server = try PostgresServer.database()
        for rule in ["update", "reject"] {
            let dir = try TemporaryDirectory()
            let url = try server.createDatabase("decimals_\(rule)_\(compositeKey ? "pair" : "one")")
            let feeds = [try dir.write("first.ndjson", Array(Self.first.utf8)), try dir.write("again.ndjson", Array(Self.again.utf8))]
            let stores = try PostgresImportTests.importBoth(feeds, pipeline: Self.pipeline(rule: rule, compositeKey: compositeKey), url: url, dir: dir)
            #expect(stores.postgres == stores.sqlite, "\(rule)")
            #expect(stores.postgres["Quake"]?.contains("q7|us|7.8|7.8") == true, "\(stores.postgres)")
            #expect(stores.joins[0].outcomes == RecordOutcomes(inserted: 7))
            #expect(stores.joins[1].outcomes == RecordOutcomes(unchanged: 7) && stores.joins[1].rejected == 0, "\(rule): \(stores.joins[1])")
            try Self.check(url)
        }
    }
}
