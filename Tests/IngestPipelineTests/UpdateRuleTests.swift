import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// How a record meets an object the store (or an earlier record) already holds: the
/// pipeline's `onConflict` rules, the same on the batch path and the object path, and
/// the outcomes the report counts.
@Suite struct UpdateRuleTests {
    /// Posts with an author (nested or by key), an event by key (its name is required)
    /// and, when `tags`, a to-many of tags (which takes the object path).
    static func spec(postRule: String = "update", authorRule: String = "update", tags: String? = nil) throws -> PipelineSpec {
        try PipelineSpec.parse(Array(pipelineText(postRule: postRule, authorRule: authorRule, tags: tags).utf8))
    }

    /// The text of `spec(postRule:authorRule:tags:)`.
    static func pipelineText(postRule: String = "update", authorRule: String = "update", tags: String? = nil) -> String {
        let tagMapping = tags.map { #", "tags": { "from": "tags", "update": "\#($0)" }"# } ?? ""
        let text = """
        { "model": { "entities": [
            { "name": "Post", "attributes": [
                { "name": "id", "type": "string", "optional": false }, { "name": "title", "type": "string" },
                { "name": "views", "type": "int64" } ],
              "relationships": [ { "name": "author", "destination": "Author", "inverse": "posts" },
                                 { "name": "event", "destination": "Event", "inverse": "posts" },
                                 { "name": "tags", "destination": "Tag", "inverse": "posts", "toMany": true } ],
              "unique": [["id"]] },
            { "name": "Author", "attributes": [
                { "name": "id", "type": "int64", "optional": false }, { "name": "name", "type": "string" },
                { "name": "email", "type": "string" } ],
              "relationships": [ { "name": "posts", "destination": "Post", "inverse": "author", "toMany": true } ],
              "unique": [["id"]] },
            { "name": "Event", "attributes": [
                { "name": "id", "type": "int64", "optional": false }, { "name": "name", "type": "string", "optional": false } ],
              "relationships": [ { "name": "posts", "destination": "Post", "inverse": "event", "toMany": true } ],
              "unique": [["id"]] },
            { "name": "Tag", "attributes": [ { "name": "name", "type": "string", "optional": false } ],
              "relationships": [ { "name": "posts", "destination": "Post", "inverse": "tags", "toMany": true } ],
              "unique": [["name"]] } ] },
          "feed": { "ndjson": true },
          "record": "Post",
          "mappings": {
            "Post": { "onConflict": "\(postRule)", "attributes": { "id": "id", "title": "title", "views": { "from": "views", "default": 0 } },
                      "relationships": { "author": "author", "event": "eventId"\(tagMapping) } },
            "Author": { "onConflict": "\(authorRule)", "attributes": { "id": "id", "name": "name", "email": "email" } },
            "Event": { "attributes": { "id": "id", "name": "name" } },
            "Tag": { "attributes": { "name": "name" } } } }
        """
        return text
    }

    func importLines(_ lines: [String], spec: PipelineSpec, dir: TemporaryDirectory, objectPath: Bool,
                     workers: Int = 1, saveEvery: Int = 100, chunkSize: Int = 100) throws -> ImportReport {
        let feed = try dir.write("feed.ndjson", Array((lines.joined(separator: "\n") + "\n").utf8))
        var options = Importer.Options(feed: feed, store: dir.file("store.sqlite"), workers: workers, saveEvery: saveEvery,
                                       chunkSize: chunkSize)
        options.objectPath = objectPath
        return try Importer(spec: spec, options: options).run()
    }

    func rows(_ dir: TemporaryDirectory, _ sql: String) throws -> [String] {
        try storeRows(dir.file("store.sqlite"), sql)
    }

    func rejects(_ report: ImportReport) throws -> [String] {
        try String(contentsOfFile: report.rejectsFile, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    /// A record that both names a new object by key alone without its required value and
    /// differs from a stored object under `reject` is rejected for the missing value on both
    /// paths (the object path, which PostgreSQL's `reject` takes, named the difference before).
    @Test(arguments: [false, true])
    func aMissingRequiredValueIsTheReasonBeforeARuleConflict(objectPath: Bool) throws {
        let dir = try TemporaryDirectory()
        let spec = try Self.spec(postRule: "reject")
        _ = try importLines([#"{"id":"p1","title":"first"}"#], spec: spec, dir: dir, objectPath: objectPath)
        let report = try importLines([#"{"id":"p1","title":"other","eventId":17}"#, #"{"id":"p1","title":"other"}"#],
                                     spec: spec, dir: dir, objectPath: objectPath)
        #expect(report.rejectedThisRun == 2)
        let reasons = try rejects(report).suffix(2).map { line -> String in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            return object["reason"] as! String
        }
        #expect(reasons == ["Event 17: name is required (the record gives only its key)",
                            #"Post "p1": title stored "first", given "other" (its onConflict rule is reject)"#])
    }

    @Test(arguments: [false, true])
    func aRelatedObjectGivenByKeyWithoutARequiredValueRejectsOnlyItsRecord(objectPath: Bool) throws {
        let dir = try TemporaryDirectory()
        let report = try importLines([
            #"{"id":"p1","eventId":17}"#,
            #"{"id":"p2","title":"fine"}"#,
            #"{"id":"p3","author":{"id":1,"name":"Ann"}}"#,
        ], spec: Self.spec(), dir: dir, objectPath: objectPath, saveEvery: 3)
        #expect(report.imported == 2 && report.rejected == 1)
        let lines = try rejects(report)
        #expect(lines.count == 1)
        #expect(lines.first?.contains(#""chunk":1,"index":0,"record":0,"reason":"Event 17: name is required (the record gives only its key)""#) == true,
                "\(lines)")
        #expect(try rows(dir, "SELECT id FROM Post ORDER BY id") == ["p2", "p3"])
        #expect(try rows(dir, "SELECT count(*) FROM Event") == ["0"])
    }

    @Test(arguments: [false, true])
    func aLaterRecordOverwritesWhatItGivesAndKeepsTheRest(objectPath: Bool) throws {
        let dir = try TemporaryDirectory()
        let report = try importLines([
            #"{"id":"p1","title":"first","views":5,"author":2}"#,
            #"{"id":"p2","author":{"id":2,"name":"Bea","email":"b@x"}}"#,
            #"{"id":"p1","title":"second"}"#,
            #"{"id":"p3","author":{"id":2,"name":"Bea Renamed"}}"#,
            #"{"id":"p2","title":null}"#,
            #"{"id":"p2"}"#,
        ], spec: Self.spec(), dir: dir, objectPath: objectPath)
        let posts = try rows(dir, "SELECT p.id, p.title, p.views, a.id AS author FROM Post p LEFT JOIN Author a ON a._pk = p._author ORDER BY p.id")
        #expect(posts == ["p1|second|5|2", "p2|NULL|0|2", "p3|NULL|0|2"], "\(posts)")
        #expect(try rows(dir, "SELECT id, name, email FROM Author") == ["2|Bea Renamed|b@x"],
                "an author first seen as a bare key takes the names later records give, and keeps the email no record took back")
        // p2's title was NULL already, and an empty record changes nothing.
        #expect(report.outcomes == RecordOutcomes(inserted: 3, updated: 1, unchanged: 2, duplicates: 3))
    }

    @Test(arguments: [false, true])
    func replaceMakesTheObjectWhatTheRecordSays(objectPath: Bool) throws {
        let dir = try TemporaryDirectory()
        _ = try importLines([
            #"{"id":"p1","title":"first","views":5,"author":{"id":3,"name":"Cy","email":"c@x"}}"#,
            #"{"id":"p1","title":"second","author":{"id":3,"name":"Cy"}}"#,
        ], spec: Self.spec(postRule: "replace", authorRule: "replace"), dir: dir, objectPath: objectPath)
        #expect(try rows(dir, "SELECT id, title, views FROM Post") == ["p1|second|0"], "views goes back to its default")
        #expect(try rows(dir, "SELECT id, name, email FROM Author") == ["3|Cy|NULL"])
    }

    @Test(arguments: [false, true])
    func keepExistingLeavesStoredObjectsAlone(objectPath: Bool) throws {
        let dir = try TemporaryDirectory()
        let report = try importLines([
            #"{"id":"p1","title":"first","author":{"id":4,"name":"Di"}}"#,
            #"{"id":"p1","title":"second","author":{"id":4,"name":"Other"}}"#,
        ], spec: Self.spec(postRule: "keepExisting", authorRule: "keepExisting"), dir: dir, objectPath: objectPath)
        #expect(try rows(dir, "SELECT id, title FROM Post") == ["p1|first"])
        #expect(try rows(dir, "SELECT name FROM Author") == ["Di"])
        #expect(report.outcomes == RecordOutcomes(inserted: 1, updated: 0, unchanged: 1, duplicates: 1))
    }

    @Test(arguments: [false, true])
    func rejectRefusesARecordThatWouldChangeAStoredObject(objectPath: Bool) throws {
        let dir = try TemporaryDirectory()
        let report = try importLines([
            #"{"id":"p1","title":"first"}"#,
            #"{"id":"p1","title":"first"}"#,
            #"{"id":"p1","title":"changed"}"#,
        ], spec: Self.spec(postRule: "reject"), dir: dir, objectPath: objectPath)
        #expect(try rows(dir, "SELECT id, title FROM Post") == ["p1|first"])
        #expect(report.rejected == 1 && report.imported == 2)
        let lines = try rejects(report)
        #expect(lines.first?.contains(#""index":2,"record":2,"reason":"Post \"p1\": title stored \"first\", given \"changed\" (its onConflict rule is reject)""#) == true, "\(lines)")
        #expect(report.outcomes == RecordOutcomes(inserted: 1, updated: 0, unchanged: 1, duplicates: 1))
    }

    @Test(arguments: ["replace", "merge"])
    func toManyListsReplaceOrMerge(rule: String) throws {
        let dir = try TemporaryDirectory()
        _ = try importLines([
            #"{"id":"p1","tags":[{"name":"a"},{"name":"b"}]}"#,
            #"{"id":"p1","tags":[{"name":"b"},{"name":"c"}]}"#,
            #"{"id":"p1","title":"no tags given: kept"}"#,
        ], spec: Self.spec(tags: rule), dir: dir, objectPath: true)
        #expect(try rows(dir, "SELECT name FROM Tag ORDER BY name") == ["a", "b", "c"])
        let coordinator = try PersistentStoreCoordinator(model: try Self.spec().model, path: dir.file("store.sqlite"))
        let context = ObjectContext(coordinator: coordinator, name: "check")
        let names = try context.performAndWait {
            let post = try #require(try context.fetch(FetchRequest("Post")).first)
            return post.objects(forKey: "tags").compactMap { $0["name"]?.stringValue }.sorted()
        }
        #expect(names == (rule == "replace" ? ["b", "c"] : ["a", "b", "c"]))
    }

    @Test func unknownRulesAreRefusedWhereTheyAreWritten() throws {
        let error = #expect(throws: PipelineError.self) { try Self.spec(postRule: "overwrite") }
        #expect(error?.message == "pipeline.mappings.Post.onConflict: unknown rule 'overwrite' (expected update, replace, keepExisting, reject)")
    }

    /// Records that repeat keys across chunks, each giving some fields: however many
    /// workers race, the store ends as one worker leaves it (a later record's fields win).
    @Test(arguments: [false, true])
    func workersRacingOverRepeatedKeysEndAsOneWorkerDoes(objectPath: Bool) throws {
        var seed: UInt64 = 7
        func next(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        var lines: [String] = []
        for number in 0..<900 {
            var fields = [#""id":"p\#(next(40))""#]
            if next(2) == 0 { fields.append(#""title":"t\#(number)""#) }
            if next(3) == 0 { fields.append(#""views":\#(number)"#) }
            if next(3) == 0 { fields.append(#""title":null"#) }
            if next(2) == 0 {
                let author = next(15)
                fields.append(next(2) == 0 ? #""author":\#(author)"# : #""author":{"id":\#(author),"name":"n\#(number)"}"#)
            }
            lines.append("{" + fields.joined(separator: ",") + "}")
        }
        func store(workers: Int) throws -> [String] {
            let dir = try TemporaryDirectory()
            _ = try importLines(lines, spec: Self.spec(), dir: dir, objectPath: objectPath, workers: workers, saveEvery: 7, chunkSize: 30)
            return try rows(dir, "SELECT p.id, p.title, p.views, a.id AS author, a.name FROM Post p LEFT JOIN Author a ON a._pk = p._author ORDER BY p.id")
                + rows(dir, "SELECT id, name FROM Author ORDER BY id")
        }
        let one = try store(workers: 1)
        #expect(one.count > 40)
        for _ in 0..<3 {
            let four = try store(workers: 4)
            #expect(four == one)
        }
    }

    /// A related object repeated exactly is not written again (the key cache remembers the
    /// fields last written): a change and a change back must both land.
    @Test(arguments: [false, true])
    func aRelatedObjectChangedAndChangedBackEndsAsTheLastRecordSays(objectPath: Bool) throws {
        let dir = try TemporaryDirectory()
        _ = try importLines([
            #"{"id":"p1","author":{"id":2,"name":"X"}}"#,
            #"{"id":"p2","author":{"id":2,"name":"X"}}"#,
            #"{"id":"p3","author":{"id":2,"name":"Y","email":"y@x"}}"#,
            #"{"id":"p4","author":{"id":2,"name":"X"}}"#,
            #"{"id":"p5","author":2}"#,
        ], spec: Self.spec(), dir: dir, objectPath: objectPath, saveEvery: 2)
        #expect(try rows(dir, "SELECT id, name, email FROM Author") == ["2|X|y@x"])
    }

    /// The record-by-record fallback of `BatchSave` on SQLite, as on PostgreSQL: a batch
    /// the store refuses for one record's data (here a trigger's RAISE, a rule only the
    /// store knows) is written again one record at a time, and only that record is
    /// rejected, with the store's reason; the others end as written in one go.
    @Test func aBatchSQLiteRefusesIsWrittenRecordByRecordAndOnlyTheRecordAtFaultIsRejected() throws {
        let dir = try TemporaryDirectory()
        let spec = try Self.spec()
        let first = try importLines([#"{"id":"p1","title":"one","author":{"id":1,"name":"Al"}}"#,
                                     #"{"id":"p2","title":"two","author":{"id":2,"name":"Bo"}}"#],
                                    spec: spec, dir: dir, objectPath: false)
        #expect(first.records == 2 && first.rejected == 0)
        for event in ["INSERT", "UPDATE"] {
            try storeRowsExecute(dir.file("store.sqlite"), """
                CREATE TRIGGER views_not_negative_\(event) BEFORE \(event) ON Post WHEN NEW.views < 0
                BEGIN SELECT RAISE(ABORT, 'views_not_negative'); END
                """)
        }
        let second = try importLines([
            #"{"id":"p3","title":"three","author":{"id":3,"name":"Cy"}}"#,
            #"{"id":"p4","views":-1,"author":{"id":4,"name":"Di"}}"#,
            #"{"id":"p1","title":"one again","author":{"id":1,"name":"Al renamed"}}"#,
            #"{"id":"p5","author":{"id":3,"name":"Cy"}}"#,
            #"{"id":"p2","title":"two again","views":7}"#,
            #"{"id":"p6","title":"six","author":{"id":1,"name":"Al at last"}}"#,
        ], spec: spec, dir: dir, objectPath: false)
        #expect(second.imported == 5 && second.rejectedThisRun == 1, "\(second)")
        let rejected = try rejects(second)
        #expect(rejected.count == 1)
        #expect(rejected.first?.contains("views_not_negative") == true && rejected.first?.contains(#""index":1"#) == true, "\(rejected)")
        let posts = try rows(dir, "SELECT p.id, p.title, p.views, a.id AS author FROM Post p LEFT JOIN Author a ON a._pk = p._author ORDER BY p.id")
        #expect(posts == ["p1|one again|0|1", "p2|two again|7|2", "p3|three|0|3", "p5|NULL|0|3", "p6|six|0|1"], "\(posts)")
        #expect(try rows(dir, "SELECT id, name FROM Author ORDER BY id") == ["1|Al at last", "2|Bo", "3|Cy"])
    }
}

/// Every pair of rules for a record's own object and its related objects, through both
/// write paths: the same store, rejects and outcomes. A stored related object meets its
/// own rule whatever its parent's; a new one related to a kept object is not made.
@Suite struct UpdateRuleCombinationTests {
    static let rules = ["update", "replace", "keepExisting", "reject"]
    static let first = [
        #"{"id":"p1","title":"one","author":{"id":1,"name":"Ann","email":"ann@x"}}"#,
        #"{"id":"p2","title":"two","author":{"id":2,"name":"Bob"}}"#,
        #"{"id":"p3","title":"three"}"#,
    ]
    static let second = [
        #"{"id":"p1","title":"one, renamed","author":{"id":1,"name":"Anna"}}"#,
        #"{"id":"p2","author":{"id":3,"name":"Cid"}}"#,
        #"{"id":"p3","title":"three","author":{"id":2,"name":"Bobby","email":"bob@x"}}"#,
        #"{"id":"p4","title":"four","author":{"id":4,"name":"Dee"}}"#,
        #"{"id":"p1","author":{"id":5,"name":"Eve"}}"#,
        #"{"id":"p2","title":"two","author":2}"#,
    ]

    func run(postRule: String, authorRule: String, objectPath: Bool) throws -> [String] {
        let dir = try TemporaryDirectory()
        let tests = UpdateRuleTests()
        let spec = try UpdateRuleTests.spec(postRule: postRule, authorRule: authorRule)
        var out: [String] = []
        for (number, lines) in [Self.first, Self.second].enumerated() {
            let feed = try dir.write("feed\(number).ndjson", Array((lines.joined(separator: "\n") + "\n").utf8))
            var options = Importer.Options(feed: feed, store: dir.file("store.sqlite"), workers: 1, saveEvery: 2, chunkSize: 100)
            options.objectPath = objectPath
            let report = try Importer(spec: spec, options: options).run()
            #expect(report.writePath == (objectPath ? "objects" : "batch"))
            out.append("run \(number + 1): \(report.outcomes.map { "\($0.inserted) inserted, \($0.updated) updated, \($0.unchanged) unchanged" } ?? "")")
            out += try tests.rejects(report).map { line in
                // The run and the reason: where the record sat is the same on both paths.
                String(line[line.range(of: #""reason""#)!.lowerBound...])
            }
        }
        out += try tests.rows(dir, #"SELECT p.id, p.title, p.views, a.id AS author FROM Post p LEFT JOIN Author a ON a._pk = p._author ORDER BY p.id"#)
        out += try tests.rows(dir, #"SELECT id, name, email, (SELECT count(*) FROM Post p WHERE p._author = a._pk) FROM Author a ORDER BY id"#)
        return out
    }

    @Test(arguments: rules, rules)
    func bothPathsGiveTheSameStoreForEveryPairOfRules(postRule: String, authorRule: String) throws {
        let batch = try run(postRule: postRule, authorRule: authorRule, objectPath: false)
        let objects = try run(postRule: postRule, authorRule: authorRule, objectPath: true)
        #expect(batch == objects, "batch:\n\(batch.joined(separator: "\n"))\nobjects:\n\(objects.joined(separator: "\n"))")
    }

    /// The case that differed: a kept post's stored author is renamed by the author's
    /// rule; a kept post's new author is not made.
    @Test(arguments: [false, true])
    func aKeptRecordStillUpdatesItsStoredRelatedObjectsAndMakesNoOrphans(objectPath: Bool) throws {
        let rows = try run(postRule: "keepExisting", authorRule: "update", objectPath: objectPath)
        #expect(rows.contains("1|Anna|ann@x|1"), "\(rows)")
        #expect(rows.contains("2|Bobby|bob@x|1"), "the stored author of a kept post is updated: \(rows)")
        #expect(!rows.contains { $0.hasPrefix("3|") || $0.hasPrefix("5|") }, "no author is made for a kept post: \(rows)")
        #expect(rows.contains("4|Dee|NULL|1"), "a new post's new author is made: \(rows)")
        #expect(rows.contains("p1|one|0|1") && rows.contains("p2|two|0|2") && rows.contains("p3|three|0|NULL"), "\(rows)")
    }
}
