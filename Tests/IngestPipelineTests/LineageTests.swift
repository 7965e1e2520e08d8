import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// Per-row lineage (`"import": {"lineage": true}`): every row names the run, chunk and
/// record that last changed it, read back with `ingest query`. The expected lineage is
/// worked out here from the feeds alone (a record that repeats a row field for field
/// leaves it, and its lineage, as it was), for two runs whose keys repeat within chunks,
/// across chunks and across the runs, on both paths and both stores. Each test has its
/// stores to itself, so they run side by side.
@Suite struct LineageTests {
    static let chunkSize = 7

    static func pipeline(lineage: Bool = true, objectPath: Bool = false) -> String {
        let tagModel = objectPath ? #", { "name": "tags", "destination": "Tag", "inverse": "photos", "toMany": true }"# : ""
        let tagEntity = objectPath ? #", { "name": "Tag", "attributes": [ { "name": "name", "type": "string", "optional": false } ], "relationships": [ { "name": "photos", "destination": "Photo", "inverse": "tags", "toMany": true } ], "unique": [["name"]] }"# : ""
        let tagMapping = objectPath ? #", "tags": { "from": "tags", "split": "," }"# : ""
        return """
        { "model": { "entities": [
            { "name": "Photo", "attributes": [ { "name": "id", "type": "string", "optional": false },
                { "name": "title", "type": "string" }, { "name": "views", "type": "int64" } ],
              "relationships": [ { "name": "whoTook", "destination": "Person", "inverse": "photos" }\(tagModel) ],
              "unique": [["id"]] },
            { "name": "Person", "attributes": [ { "name": "id", "type": "int64", "optional": false }, { "name": "name", "type": "string" } ],
              "relationships": [ { "name": "photos", "destination": "Photo", "inverse": "whoTook", "toMany": true } ],
              "unique": [["id"]] }\(tagEntity) ] },
          "feed": { "ndjson": true },
          "record": "Photo",
          "mappings": {
            "Photo": { "attributes": { "id": "id", "title": "title", "views": "views" }, "relationships": { "whoTook": "by"\(tagMapping) } },
            "Person": { "attributes": { "id": "id", "name": "name" } }\(objectPath ? #", "Tag": { "attributes": { "name": "name" } }"# : "") },
          "import": { "lineage": \(lineage), "chunkSize": \(chunkSize), "saveEvery": 3 } }
        """
    }

    /// Two runs' records: few ids and few values, so that many records repeat a stored row
    /// exactly (no change) and many change it; photographers nested with a name, or named by
    /// id alone (a placeholder until a record describes them).
    static func feeds() -> [[String]] {
        var random = SplitMix64(seed: 44)
        var last: [Int: String] = [:]
        func record() -> String {
            let id = random.below(12)
            // Half the records repeat their photo's last record exactly: a change of nothing.
            if let repeated = last[id], random.below(2) == 0 { return repeated }
            let by = random.below(3) == 0 ? "\(random.below(5))" : #"{"id": \#(random.below(5)), "name": "n\#(random.below(2))"}"#
            last[id] = #"{"id": "p\#(id)", "title": "t\#(random.below(2))", "views": \#(random.below(2)), "by": \#(by), "tags": "x,y"}"#
            return last[id]!
        }
        return [(0..<80).map { _ in record() }, (0..<12).map { _ in record() }]
    }

    /// Each row's key → "run/chunk/record", worked out from the feeds by the `update` rule.
    static func expected(_ feeds: [[String]]) -> (photos: [String: String], people: [String: String]) {
        var photos: [String: (values: String, lineage: String)] = [:]
        var people: [String: (name: String?, lineage: String)] = [:]
        for (run, lines) in feeds.enumerated() {
            for (number, line) in lines.enumerated() {
                let lineage = "\(run + 1)/\(number / chunkSize + 1)/\(number % chunkSize)"
                let record = try! JSONValue.parse(Array(line.utf8))
                let person: String
                if case .object = record["by"]! {
                    person = record["by"]!["id"]!.description
                    let name = record["by"]!["name"]!.stringValue
                    // A new person, a placeholder described at last, or a new name.
                    if people[person] == nil || people[person]!.name == nil || people[person]!.name != name {
                        people[person] = (name, lineage)
                    }
                } else {
                    person = record["by"]!.description
                    if people[person] == nil { people[person] = (nil, lineage) }
                }
                let id = record["id"]!.stringValue!
                let values = "\(record["title"]!)|\(record["views"]!)|\(person)"
                if photos[id]?.values != values { photos[id] = (values, lineage) }
            }
        }
        return (photos.mapValues(\.lineage), people.mapValues(\.lineage))
    }

    /// `ingest query STORE ENTITY --fields id,_ingest_run,…` as key → "run/chunk/record".
    static func queried(_ store: String, _ entity: String) throws -> [String: String] {
        let out = try IngestBinary.run(["query", store, entity, "--fields", "id,_ingest_run,_ingest_chunk,_ingest_record", "--format", "csv"])
        #expect(out.status == 0, "\(out.stderr)")
        // CSV lines end in CRLF (RFC 4180).
        let lines = out.stdout.components(separatedBy: "\r\n").filter { !$0.isEmpty }.map { $0.components(separatedBy: ",") }
        #expect(lines.first == ["id", "_ingest_run", "_ingest_chunk", "_ingest_record"])
        return Dictionary(uniqueKeysWithValues: lines.dropFirst().map { ($0[0], $0[1...].joined(separator: "/")) })
    }

    static func importRuns(_ feeds: [[String]], pipeline: String, store: String, dir: TemporaryDirectory, workers: Int) throws {
        try pipeline.write(toFile: dir.file("pipeline.json"), atomically: true, encoding: .utf8)
        for (run, lines) in feeds.enumerated() {
            let feed = dir.file("feed-\(run + 1).ndjson")
            try (lines.joined(separator: "\n") + "\n").write(toFile: feed, atomically: true, encoding: .utf8)
            let out = try IngestBinary.run(["import", feed, "--pipeline", dir.file("pipeline.json"), "--store", store,
                                            "--workers", "\(workers)", "--quiet"])
            #expect(out.status == 0, "\(out.stderr)")
        }
    }

    static func expectLineage(_ store: String, _ what: String) throws {
        let expected = expected(feeds())
        let photos = try queried(store, "Photo"), people = try queried(store, "Person")
        #expect(photos == expected.photos, "\(what): photos")
        #expect(people == expected.people, "\(what): people")
        // Both runs left rows of their own, and the second left rows of the first alone.
        #expect(Set(photos.values.map { $0.prefix(2) }) == ["1/", "2/"], "\(what)")
    }

    @Test(arguments: [(1, false), (2, false), (1, true), (2, true)])
    func everySQLiteRowNamesTheRecordThatLastChangedIt(workers: Int, objectPath: Bool) throws {
        let dir = try TemporaryDirectory()
        let store = dir.file("store.sqlite")
        try Self.importRuns(Self.feeds(), pipeline: Self.pipeline(objectPath: objectPath), store: store, dir: dir, workers: workers)
        try Self.expectLineage(store, "\(workers) worker(s)\(objectPath ? ", object path" : "")")
        if objectPath {
            // Tags are named by every record and never change: the first record that named them made them.
            let tags = try IngestBinary.run(["query", store, "Tag", "--fields", "name,_ingest_run,_ingest_chunk,_ingest_record", "--format", "csv"])
            #expect(tags.stdout == "name,_ingest_run,_ingest_chunk,_ingest_record\r\nx,1,1,0\r\ny,1,1,0\r\n", "\(tags.stdout)")
        }
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")), arguments: [false, true])
    func everyPostgreSQLRowNamesTheRecordThatLastChangedIt(objectPath: Bool) throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let url = try server.createDatabase("lineage")
        try Self.importRuns(Self.feeds(), pipeline: Self.pipeline(objectPath: objectPath), store: url, dir: dir, workers: 2)
        try Self.expectLineage(url, "PostgreSQL\(objectPath ? ", object path" : "")")
    }

    /// Several records of one save meeting the same stored row: only the stored values say
    /// which of them changed it. p1: the second gives a field as stored (no change); p3: changed,
    /// then changed back (two changes). PostgreSQL writes them in rounds to name the same records as SQLite.
    static let sameSaveFeeds = [
        [#"{"id": "p1", "title": "a", "views": 1}"#, #"{"id": "p3", "title": "a", "views": 1}"#],
        [#"{"id": "p1", "title": "b"}"#, #"{"id": "p1", "views": 1}"#, #"{"id": "p2", "title": "x"}"#,
         #"{"id": "p3", "title": "z"}"#, #"{"id": "p3", "title": "a"}"#, #"{"id": "p1", "views": 1}"#],
    ]
    static let sameSaveExpected = ["p1": "2/1/0", "p2": "2/1/2", "p3": "2/1/4"]

    @Test func severalRecordsOfOneSaveMeetingAStoredRowNameTheOneThatChangedItOnSQLite() throws {
        let dir = try TemporaryDirectory()
        let store = dir.file("store.sqlite")
        try Self.importRuns(Self.sameSaveFeeds, pipeline: Self.pipeline().replacingOccurrences(of: #""saveEvery": 3"#, with: #""saveEvery": 6"#),
                            store: store, dir: dir, workers: 1)
        #expect(try Self.queried(store, "Photo") == Self.sameSaveExpected)
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")), arguments: [1, 2])
    func severalRecordsOfOneSaveMeetingAStoredRowNameTheOneThatChangedItOnPostgreSQL(workers: Int) throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let url = try server.createDatabase("same_save_\(workers)")
        try Self.importRuns(Self.sameSaveFeeds, pipeline: Self.pipeline().replacingOccurrences(of: #""saveEvery": 3"#, with: #""saveEvery": 6"#),
                            store: url, dir: dir, workers: workers)
        #expect(try Self.queried(url, "Photo") == Self.sameSaveExpected)
    }

    @Test func aPredicateFindsTheRowsARunChanged() throws {
        let dir = try TemporaryDirectory()
        let store = dir.file("store.sqlite")
        try Self.importRuns(Self.feeds(), pipeline: Self.pipeline(), store: store, dir: dir, workers: 1)
        let changed = Self.expected(Self.feeds()).photos.filter { $0.value.hasPrefix("2/") }.keys.sorted()
        let out = try IngestBinary.run(["query", store, "Photo", "--where", "_ingest_run == 2", "--sort", "id", "--fields", "id", "--format", "csv"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.stdout.components(separatedBy: "\r\n").filter { !$0.isEmpty }.dropFirst() == changed[...])
    }

    @Test func withoutLineageTheStoreHasNoLineageAttributes() throws {
        let spec = try PipelineSpec.parse(Array(Self.pipeline(lineage: false).utf8))
        #expect(!spec.lineage && !spec.model.hasLineage("Photo"))
        #expect(spec.model.entity("Photo")!.attributes.map(\.name) == ["id", "title", "views"])
        let with = try PipelineSpec.parse(Array(Self.pipeline().utf8))
        #expect(with.model.entity("Photo")!.attributes.map(\.name) == ["id", "title", "views"] + Model.lineageAttributeNames)
        #expect(with.model.entity("Person")!.attributes.map(\.name) == ["id", "name"] + Model.lineageAttributeNames)
    }

    @Test func turningLineageOnForAStoreAddsItAndFillsItFromThenOn() throws {
        let dir = try TemporaryDirectory()
        let store = dir.file("store.sqlite")
        let feeds = Self.feeds()
        try Self.importRuns([feeds[0]], pipeline: Self.pipeline(lineage: false), store: store, dir: dir, workers: 1)
        let second = try TemporaryDirectory()
        try Self.importRuns([[], feeds[1]].filter { !$0.isEmpty }, pipeline: Self.pipeline(), store: store, dir: second, workers: 1)
        // What the second run did not change has no lineage.
        let expected = Self.expected(feeds).photos
        let photos = try Self.queried(store, "Photo")
        #expect(photos == expected.mapValues { $0.hasPrefix("2/") ? $0 : "//" })
    }

    /// The importer alone sets lineage: a model that declares a lineage attribute, or a
    /// mapping that writes one, is refused where it says so.
    @Test func aPipelineCannotDeclareOrMapALineageAttribute() throws {
        let declared = Self.pipeline(lineage: false).replacingOccurrences(of: #"{ "name": "views", "type": "int64" }"#,
                                                                         with: #"{ "name": "views", "type": "int64" }, { "name": "_ingest_run", "type": "int64" }"#)
        #expect(throws: PipelineError(at: "pipeline.model", #"attribute Photo._ingest_run: names starting with '_' are reserved (_ingest_run is a lineage attribute, which "import": {"lineage": true} adds)"#)) {
            try PipelineSpec.parse(Array(declared.utf8))
        }
        let mapped = Self.pipeline().replacingOccurrences(of: #""views": "views" }"#, with: #""views": "views", "_ingest_run": "run" }"#)
        #expect(throws: PipelineError(at: "pipeline.mappings.Photo", "_ingest_run is a lineage attribute: the importer sets it, no record does")) {
            try PipelineSpec.parse(Array(mapped.utf8))
        }
    }

    @Test func aRelationshipWhoseColumnWouldTakeALineageNameIsRefused() throws {
        let text = Self.pipeline().replacingOccurrences(of: "whoTook", with: "ingest_run")
        #expect(throws: PipelineError.self) { try PipelineSpec.parse(Array(text.utf8)) }
        do {
            _ = try PipelineSpec.parse(Array(text.utf8))
        } catch let error as PipelineError {
            #expect(error.place == "pipeline.import.lineage" && error.problem.contains("Photo.ingest_run"), "\(error)")
        }
    }
}
