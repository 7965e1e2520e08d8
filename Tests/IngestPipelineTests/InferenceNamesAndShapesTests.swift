import Foundation
import IngestJSON
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// What inference tells a user (issue 22): names (singular only when sure, plural inverses
/// as English spells them, feed file names without dates and counts), shapes (a lone object
/// over an array of plain values), explanations (nested paths, members given twice,
/// lookalike entities), and import's shape options and model-mismatch advice.
@Suite struct InferenceNamesAndShapesTests {
    @Test(arguments: [
        ("photos", "photo"), ("movies", "movie"), ("statuses", "status"), ("retweeted_status", "retweeted_status"),
        ("retweetedStatuses", "retweetedStatus"), ("seat_categories", "seat_category"), ("seatCategories", "seatCategory"),
        ("cities", "city"), ("addresses", "address"), ("boxes", "box"), ("matches", "match"), ("people", "person"),
        ("People", "Person"), ("URLs", "URL"), ("user_mentions", "user_mention"), ("series", "series"), ("data", "data"),
        ("news", "news"), ("analysis", "analysis"), ("status", "status"), ("bonus", "bonus"), ("class", "class"),
        ("physics", "physics"), ("caches", "caches"), ("leaves", "leaf"), ("archives", "archives"), ("gas", "gas"),
        ("photos2", "photos2"), ("s", "s"), ("bus", "bus"), ("buses", "bus"),
    ])
    func singularChangesOnlyWhatItIsSureOf(plural: String, singular: String) {
        #expect(PipelineInference.singular(plural) == singular)
    }

    @Test(arguments: [
        ("photo", "photos"), ("seatCategory", "seatCategories"), ("status", "statuses"), ("box", "boxes"),
        ("match", "matches"), ("day", "days"), ("person", "people"), ("movie", "movies"), ("bus", "buses"),
        ("series", "series"), ("retweetedStatus", "retweetedStatuses"), ("city", "cities"),
    ])
    func pluralsOfInversesAreEnglish(singular: String, plural: String) {
        #expect(PipelineInference.plural(singular) == plural)
    }

    @Test(arguments: [
        ("movies.json", "Movie"), ("statuses.json", "Status"), ("flights-5k.json", "Flight"),
        ("photos-2024-03.ndjson", "Photo"), ("github_events.json", "GithubEvent"), ("2024.json", "E2024"),
    ])
    func feedFileNamesGiveEntityNames(file: String, entity: String) {
        #expect(PipelineInference.entityName(forFeed: "/tmp/" + file, shape: .array) == entity)
    }

    /// A lone object, or lines of objects, is the record; an array of plain values in it
    /// (tags, coordinates) is a field of it, not the feed's records.
    @Test(arguments: [
        ("{\"name\":\"x\",\"tags\":[\"a\",\"b\"]}\n", FeedShape.ndjson),
        ("{\"name\":\"x\",\"tags\":[\"a\",\"b\"]}", FeedShape.ndjson),
        ("{\"name\":\"x\",\"tags\":[\"a\"]}\n{\"name\":\"y\",\"tags\":[]}\n", FeedShape.ndjson),
        ("{\"bbox\":[1,2,3,4],\"features\":[{\"id\":1},{\"id\":2}]}", FeedShape.keyPath(["features"])),
        ("[{\"id\":1,\"tags\":[\"a\"]}]", FeedShape.array),
    ])
    func aLoneObjectWinsOverAnArrayOfPlainValues(feed: String, shape: FeedShape) throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("feed.json", Array(feed.utf8))
        let inference = try PipelineInference.infer(feed: path)
        #expect(inference.shape == shape)
        #expect(inference.recordsRead >= 1)
    }

    /// The explanation names a nested member by its path in the record.
    @Test func explanationsNameNestedMembersByTheirPath() throws {
        let dir = try TemporaryDirectory()
        let records = (1...3).map { n in
            #"{"id":\#(n),"type":"ForkEvent","payload":{"action":"x","forkee":{"id":\#(n + 10),"name":"r\#(n)"}},"#
                + #""entities":{"user_mentions":[{"id":\#(n + 20),"screen_name":"u\#(n)"}]}}"#
        }
        let path = try dir.write("github_events.json", Array(("[" + records.joined(separator: ",") + "]").utf8))
        let report = try PipelineInference.infer(feed: path).report.joined(separator: "\n")
        #expect(report.contains("GithubEvent.payload.forkee: nested objects with 'id' → to-one relationship to Forkee"), "\(report)")
        #expect(report.contains("GithubEvent.entities.user_mentions: arrays of objects with 'id' → to-many relationship to UserMention"), "\(report)")
        #expect(report.contains("objects at GithubEvent.entities.user_mentions[] sampled"), "\(report)")
    }

    /// A member given twice in a record counts once, with the value an import keeps (the
    /// last), and the explanation says how many records did it.
    @Test func aMemberGivenTwiceCountsOnceWithItsLastValue() throws {
        let dir = try TemporaryDirectory()
        let feed = #"[{"id":1,"n":1,"n":"x"},{"id":2,"n":"y"},{"id":3,"n":"z"},{"id":4,"n":"w"},{"id":5,"n":"v"}]"#
        let path = try dir.write("things.json", Array(feed.utf8))
        let report = try PipelineInference.infer(feed: path).report
        #expect(report.contains("Thing.n: string (5 strings)"), "\(report)")
        #expect(report.contains("Thing: 1 of the 5 records sampled give a member twice ('n'): the last value counts, here and when importing"), "\(report)")
    }

    /// A store made with another model is refused with its first differences and the
    /// ways on, not a line of every attribute.
    @Test func aModelMismatchNamesTheWaysOn() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("photos.json")
        try FeedGenerator(records: 20).write(to: feed)
        let store = dir.file("s.sqlite")
        let pipelines = PipelineSpecTests.root.appendingPathComponent("Pipelines").path
        let first = try IngestBinary.run(["import", feed, "--pipeline", pipelines + "/bench-photos.json", "--store", store, "--quiet"])
        #expect(first.status == 0, "\(first.stderr)")
        let second = try IngestBinary.run(["import", feed, "--pipeline", pipelines + "/photos.json", "--store", store, "--again"])
        #expect(second.status == 1)
        #expect(second.stderr.contains("was made with a different model: attribute Photo.uploadDate changed type from string to date"), "\(second.stderr)")
        #expect(second.stderr.contains("import into a new store, or pass --delete-store to start this one over"), "\(second.stderr)")
    }

    /// `import` without a pipeline takes infer's shape options: a graph file's nodes, not
    /// its largest array; with a pipeline, or a store that keeps one, they are refused.
    @Test func importWithoutAPipelineTakesTheShapeOptions() throws {
        let dir = try TemporaryDirectory()
        let graph = try dir.write("graph.json", Array(#"{"nodes":[{"id":1,"name":"a"},{"id":2,"name":"b"}],"links":[{"source":1,"target":2},{"source":2,"target":1},{"source":1,"target":1}]}"#.utf8))
        let store = dir.file("g.sqlite")
        let nodes = try IngestBinary.run(["import", graph, "--store", store, "--records-at", "nodes", "--sample", "10"])
        #expect(nodes.status == 0, "\(nodes.stderr)")
        #expect(nodes.stderr.contains("Node: 2 records sampled; unique by 'id'"), "\(nodes.stderr)")
        #expect(nodes.stdout.contains("Node: 2"), "\(nodes.stdout)")
        let again = try IngestBinary.run(["import", graph, "--store", store, "--records-at", "links"])
        #expect(again.status == 1)
        #expect(again.stderr == "ingest: \(store) keeps the pipeline inferred by its first import (\(store).pipeline.json), whose \"feed\" says where the records are: edit it and pass --pipeline \(store).pipeline.json, or pass --delete-store to infer one again\n", "\(again.stderr)")
        let given = try IngestBinary.run(["import", graph, "--store", dir.file("h.sqlite"), "--pipeline", store + ".pipeline.json", "--ndjson"])
        #expect(given.status != 0)
        #expect(given.stderr.hasPrefix("Error: --records-at, --ndjson, --keyed, --header-row and --sample shape the pipeline inferred without --pipeline; with one, its \"feed\" says where the records are\n"), "\(given.stderr)")
    }

    /// Entities made under several member names with the same key and fields are named
    /// together in the explanation, with how to make them one.
    @Test func lookalikeEntitiesAreNamedTogether() throws {
        let dir = try TemporaryDirectory()
        let feed = #"[{"id":1,"actor":{"id":1,"login":"a"},"owner":{"id":2,"login":"b"},"user":{"id":3,"login":"c"}},"#
            + #"{"id":2,"actor":{"id":5,"login":"e"},"owner":{"id":2,"login":"b"},"user":{"id":1,"login":"a"}}]"#
        let path = try dir.write("issues.json", Array(feed.utf8))
        let report = try PipelineInference.infer(feed: path).report
        #expect(report.contains { $0.hasPrefix("Actor, Owner and User: the same fields (id, login), unique by 'id': likely one kind of object under 3 member names") },
                "\(report)")
    }

    /// A keyed map whose objects carry their key as an integer `id` too is unique by the
    /// id (typed as given), so other records can relate to it by that id; without such an
    /// id it stays unique by its `@key`.
    @Test(arguments: [(#"{"7":{"id":7,"name":"a"},"9":{"id":9,"name":"b"}}"#, "id"),
                      (#"{"7":{"id":8,"name":"a"},"9":{"id":9,"name":"b"}}"#, "@key"),
                      (#"{"a":{"name":"x"},"b":{"name":"y"}}"#, "@key")])
    func aKeyedMapWhoseObjectsCarryTheirKeyAsIdIsUniqueByTheId(feed: String, key: String) throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("things.json", Array(feed.utf8))
        let inference = try PipelineInference.infer(feed: path, options: .init(shape: .keyed([])))
        #expect(inference.report.contains("Thing: 2 records sampled; unique by '\(key)' (present in every one)"), "\(inference.report)")
    }

    /// A feed of plain values imports: inferred, each record is mapped through "@value";
    /// a pipeline may map it too (here into a unique name, so repeats update one object).
    @Test func aFeedOfPlainValuesImports() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("tags.json", Array(#"["rust","swift","go","swift"]"#.utf8))
        let inferred = try IngestBinary.run(["import", feed, "--store", dir.file("a.sqlite")])
        #expect(inferred.status == 0, "\(inferred.stderr)")
        #expect(inferred.stderr.contains(#"feed: records are plain values, not objects: each is mapped through "@value""#), "\(inferred.stderr)")
        #expect(inferred.stdout.contains("Tag: 4"), "\(inferred.stdout)")
        let pipeline = try dir.write("tags-pipeline.json", Array("""
            { "model": { "entities": [ { "name": "Tag", "attributes": [ { "name": "name", "type": "string", "optional": false } ],
                                         "unique": [["name"]] } ] },
              "feed": { "values": true }, "record": "Tag", "mappings": { "Tag": { "attributes": { "name": "@value" } } } }
            """.utf8))
        for objectPath in [false, true] {
            var options = Importer.Options(feed: feed, store: dir.file("b-\(objectPath).sqlite"))
            options.objectPath = objectPath
            let report = try Importer(spec: try PipelineSpec.load(path: pipeline), options: options).run()
            #expect(report.counts == ["Tag": 3] && report.rejected == 0, "\(report.counts)")
        }
        let error = #expect(throws: PipelineError.self) {
            try PipelineSpec.parse(Array(#"{"model":{"entities":[{"name":"T","attributes":[{"name":"v","type":"string"}]}]},"feed":{"values":true,"rows":"header"},"record":"T","mappings":{"T":{"attributes":{"v":"@value"}}}}"#.utf8))
        }
        #expect(error?.message == "pipeline.feed: rows and values exclude each other")
    }
}
