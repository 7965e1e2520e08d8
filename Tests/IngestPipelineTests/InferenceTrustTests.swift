import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// Inference that loses nothing: an id unique only within its record is no key, numbers
/// beyond 64 bits stay exact, members beside the records are named, and a feed without
/// keys is not imported twice by accident.
@Suite struct InferenceTrustTests {
    func write(_ dir: TemporaryDirectory, _ name: String, _ value: Any) throws -> String {
        try dir.write(name, Array(try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])))
    }

    @Test func anIDUniqueOnlyWithinItsRecordIsNoKeyAndNothingIsMerged() throws {
        let dir = try TemporaryDirectory()
        let records: [[String: Any]] = (0..<300).map { i in
            ["id": i, "friends": (0..<3).map { j in ["id": j, "name": "f\(i)-\(j)"] }, "best": ["id": 0, "name": "b\(i)"],
             "team": ["id": i % 7, "name": "team \(i % 7)"]]
        }
        let feed = try write(dir, "members.json", records)
        let inference = try PipelineInference.infer(feed: feed)
        let notAKey = "'id' is not a key: 3 of its values came with different contents in different objects (id 0, say), so it names an object only within its record"
        #expect(inference.report.contains("Member.friends: arrays of objects whose \(notAKey) (unsure, so they stay with their record) → JSON text in the string attribute friends"),
                "\(inference.report)")
        #expect(inference.report.contains { $0.hasPrefix("Member.best: nested objects whose 'id' is not a key: 1 of its values") && $0.hasSuffix("→ flattened into Member as best_…") },
                "\(inference.report)")
        // An id that always comes with the same content is a key: one shared Team per id.
        #expect(inference.report.contains("Team: 300 objects at Member.team sampled; found or created by 'id' (present in every one)"), "\(inference.report)")
        let report = try Importer(spec: inference.spec, options: .init(feed: feed, store: dir.file("store.sqlite"))).run()
        #expect(report.rejected == 0)
        #expect(report.counts == ["Member": 300, "Team": 7])
        let rows = try storeRows(dir.file("store.sqlite"), #"SELECT id, friends, best_id, best_name FROM Member WHERE id = 123"#)
        #expect(rows == [#"123|[{"id":0,"name":"f123-0"},{"id":1,"name":"f123-1"},{"id":2,"name":"f123-2"}]|0|b123"#])
    }

    /// Nesting is followed three levels below the record: the same shape met nearer the
    /// top is flattened, met deeper it is one JSON-text attribute, and the explanation says
    /// which and why (the README's depth rule).
    @Test func objectsNestedDeeperThanThreeLevelsAreJSONTextAndSaySo() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("depth.json", Array(#"[{"id":1,"a":{"b":{"c":1}},"deep":{"y":{"a":{"b":{"c":1}}}}},{"id":2,"a":{"b":{"c":2}},"deep":{"y":{"a":{"b":{"c":2}}}}}]"#.utf8))
        let inference = try PipelineInference.infer(feed: feed)
        #expect(inference.report.contains("Depth.a.b: nested objects without an id-like field → flattened into Depth as a_b_…"), "\(inference.report)")
        #expect(inference.report.contains("Depth.deep.y.a: nested objects without an id-like field → flattened into Depth as deep_y_a_…"), "\(inference.report)")
        #expect(inference.report.contains { $0.hasPrefix("Depth.deep_y_a_b: nested deeper than 3 levels → JSON text") }, "\(inference.report)")
        let report = try Importer(spec: inference.spec, options: .init(feed: feed, store: dir.file("store.sqlite"))).run()
        #expect(report.rejected == 0)
        #expect(try storeRows(dir.file("store.sqlite"), "SELECT a_b_c, deep_y_a_b FROM Depth ORDER BY id") == [#"1|{"c":1}"#, #"2|{"c":2}"#])
    }

    @Test func integersBeyond64BitsAndNumbersBeyondADoubleAreKeptExactly() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("big.json", Array(#"[{"id":18446744073709551615,"x":1},{"id":-98446744073709551615,"x":2.5},{"id":3,"x":1e400}]"#.utf8))
        let inference = try PipelineInference.infer(feed: feed)
        #expect(inference.report.contains("Big.id: decimal (3 whole numbers, 2 of them beyond 64 bits, up to -98446744073709551615: kept exactly as decimal text, as no int64 or double holds them)"),
                "\(inference.report)")
        #expect(inference.report.contains("Big.x: decimal (3 numbers, 1 of them beyond a double's range: kept exactly as decimal text)"), "\(inference.report)")
        #expect(inference.spec.model.entity("Big")?.uniquenessConstraints == [["id"]])
        let report = try Importer(spec: inference.spec, options: .init(feed: feed, store: dir.file("store.sqlite"))).run()
        #expect(report.rejected == 0)
        #expect(try storeRows(dir.file("store.sqlite"), "SELECT id, x FROM Big ORDER BY _pk")
                == ["18446744073709551615|1", "-98446744073709551615|2.5", "3|1" + String(repeating: "0", count: 400)])
    }

    @Test func membersBesideTheRecordsAreNamedWhenInferredSplitAndImported() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("grid.json", Array(#"{"location":"x","columns":{"a":{"t":1},"b":{"t":2}},"source":{"by":"me"}}"#.utf8))
        let inference = try PipelineInference.infer(feed: feed)
        #expect(inference.report.first == "feed: records are the values of the object at 'columns', keyed by their names (mapped as \"@key\"); the other top-level members ('location', 'source') are outside the records and not imported: to import the whole object as one record, infer or import with --ndjson")
        let report = try Importer(spec: inference.spec, options: .init(feed: feed, store: dir.file("store.sqlite"))).run()
        #expect(report.outsideRecords == ["location", "source"])
        let split = try IngestBinary.run(["split", feed, "--records-at", "columns", "--keyed", "--out", dir.file("chunks")])
        #expect(split.stdout.contains("\n  outside the records: the top-level members 'location', 'source' (not imported; to import the whole object as one record, read the feed with --ndjson)\n"),
                "\(split.stdout)")
        let whole = try PipelineInference.infer(feed: feed, options: .init(shape: .ndjson))
        #expect(try Importer(spec: whole.spec, options: .init(feed: feed, store: dir.file("whole.sqlite"))).run().imported == 1)
    }

    /// The same feed again with the same pipeline: nothing to do when an entity has no key
    /// (its rows would be added again); a keyed pipeline's repeat runs and changes nothing.
    @Test func aRepeatOfTheLastFeedWithoutKeysIsNothingToDo() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("readings.json", Array(#"[{"sensor":"a","value":1},{"sensor":"b","value":2}]"#.utf8))
        let inference = try PipelineInference.infer(feed: feed)
        #expect(inference.report.contains { $0.hasPrefix("Reading: 2 records sampled; no id-like field") && $0.hasSuffix("Importing the same feed again is skipped, but another feed that repeats these records adds them again") },
                "\(inference.report)")
        let store = dir.file("store.sqlite")
        _ = try Importer(spec: inference.spec, options: .init(feed: feed, store: store)).run()
        #expect(throws: ImportError(.alreadyImported(store: store, run: 1, keyless: ["Reading"]))) {
            try Importer(spec: inference.spec, options: .init(feed: feed, store: store)).run()
        }
        #expect(try PersistentStoreCoordinator(existingStoreAt: store).count("Reading") == 2)
        let pipeline = try dir.write("pipeline.json", Array(inference.text.utf8))
        let cli = try IngestBinary.run(["import", feed, "--pipeline", pipeline, "--store", store])
        #expect(cli.status == 0)
        #expect(cli.stdout == "\(store): run 1 imported this feed (same checksum) with this pipeline and finished; nothing to do (Reading has no uniqueness key: importing the feed again would add its rows again). Pass --again to import it anyway\n")
        var options = Importer.Options(feed: feed, store: store)
        options.again = true
        #expect(try Importer(spec: inference.spec, options: options).run().run == 2)
        #expect(try PersistentStoreCoordinator(existingStoreAt: store).count("Reading") == 4)

        let keyed = try PipelineSpec.load(path: RunCommandTests.pipeline)
        let photos = try dir.write("photos.json", FeedGenerator(records: 20).bytes())
        _ = try Importer(spec: keyed, options: .init(feed: photos, store: dir.file("photos.sqlite"))).run()
        let repeated = try Importer(spec: keyed, options: .init(feed: photos, store: dir.file("photos.sqlite"))).run()
        #expect(repeated.run == 2 && repeated.outcomes?.unchanged == 20)
    }
}
