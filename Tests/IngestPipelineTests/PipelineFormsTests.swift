import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// The feed forms the pipeline reaches, each with its fixture and the example pipeline
/// in Pipelines/: records that are an object's values, rows with a header, records
/// whose entity a field chooses.
@Suite struct PipelineFormsTests {
    static let root = PipelineSpecTests.root
    static func pipeline(_ name: String) throws -> PipelineSpec {
        try PipelineSpec.load(path: root.appendingPathComponent("Pipelines/\(name)").path)
    }
    static func fixture(_ name: String) -> String { root.appendingPathComponent("Fixtures/feeds/\(name)").path }

    func run(_ spec: PipelineSpec, _ feed: String, objectPath: Bool = false) throws -> (ImportReport, TemporaryDirectory) {
        let dir = try TemporaryDirectory()
        var options = Importer.Options(feed: feed, store: dir.file("store.sqlite"), chunkSize: 2)
        options.objectPath = objectPath
        return (try Importer(spec: spec, options: options).run(), dir)
    }

    func rows(_ dir: TemporaryDirectory, _ sql: String) throws -> [String] {
        try storeRows(dir.file("store.sqlite"), sql)
    }

    @Test(arguments: [false, true])
    func recordsThatAreAnObjectsValuesCarryTheirKey(objectPath: Bool) throws {
        let (report, dir) = try run(Self.pipeline("keyed-events.json"), Self.fixture("events-keyed.json"), objectPath: objectPath)
        #expect(report.imported == 4 && report.rejected == 0)
        #expect(try rows(dir, "SELECT e.id, e.type, a.login FROM Event e LEFT JOIN Actor a ON a._pk = e._actor ORDER BY e.id")
                == ["138586341|PushEvent|ann", "138586342|WatchEvent|bo", "138586343|PushEvent|ann", "138586344|NULL|NULL"])
    }

    @Test func keyedRecordsReadFromAnyBufferSplit() throws {
        let text = #"{"a": {"x": 1}, "b" : [1, 2], "c\"d": "text", "e":{ }}"#
        for size in 1...text.utf8.count {
            let reader = FeedReader(source: MemoryByteSource(text, readSize: size), name: "t", options: FeedOptions(shape: .keyed([])))
            var records: [String] = []
            try reader.read { records.append(($0.key ?? "?") + "=" + String(decoding: $0.bytes, as: UTF8.self)) }
            #expect(records == [#"a={"x": 1}"#, "b=[1, 2]", #"c"d="text""#, "e={ }"], "read size \(size)")
        }
    }

    @Test(arguments: [false, true])
    func rowsBecomeObjectsNamedByTheHeaderRow(objectPath: Bool) throws {
        let (report, dir) = try run(Self.pipeline("cities-rows.json"), Self.fixture("cities-rows.ndjson"), objectPath: objectPath)
        #expect(report.records == 5, "the header row is not a record")
        #expect(report.imported == 4 && report.rejected == 1)
        #expect(try rows(dir, "SELECT id, name, country, population FROM City ORDER BY id")
                == ["1|Lisbon|PT|545000", "2|Porto|PT|232000", "3|東京|JP|13960000", "5|Osaka|JP|NULL"])
        let rejects = try String(contentsOfFile: report.rejectsFile, encoding: .utf8)
        #expect(rejects.contains(#""record":3,"reason":"the row has 2 values; the header names 4 columns""#), "\(rejects)")
        #expect(rejects.contains(#"[4,\"a short row\"]"#), "the row is kept whole")
    }

    @Test func aFieldChoosesEachRecordsEntity() throws {
        let (report, dir) = try run(Self.pipeline("typed-events.json"), Self.fixture("events-typed.ndjson"))
        #expect(report.imported == 5 && report.rejected == 0)
        #expect(report.counts == ["PushEvent": 2, "IssueEvent": 1, "Event": 2, "Actor": 3])
        #expect(try rows(dir, "SELECT p.id, p.ref, p.commits, a.login FROM PushEvent p JOIN Actor a ON a._pk = p._actor ORDER BY p.id")
                == ["1|refs/heads/main|3|ann", "4|refs/heads/dev|1|cy"])
        #expect(try rows(dir, "SELECT id, action, issue, title FROM IssueEvent") == ["2|opened|7|Bug"])
        #expect(try rows(dir, "SELECT id, type FROM Event ORDER BY id") == ["3|WatchEvent", "5|unknown"])
    }

    @Test func aValueThatNamesNoEntityIsRejectedWithoutAFallback() throws {
        var spec = try Self.pipeline("typed-events.json")
        spec.discriminator?.otherwise = nil
        let mapper = RecordMapper(spec: spec)
        let error = #expect(throws: CoercionError.self) { try mapper.map(JSONValue.parse(#"{"id":"9","type":"ForkEvent"}"#)) }
        #expect(error?.message == "type: 'ForkEvent' names no entity of the pipeline (expected one of IssuesEvent, PushEvent)")
    }

    static func transforms(tags: Bool) throws -> PipelineSpec {
        let tagMapping = tags ? #", "relationships": { "tags": { "from": "labels", "split": "," } }"# : ""
        return try PipelineSpec.parse(Array("""
        { "model": { "entities": [
            { "name": "Issue", "attributes": [
                { "name": "id", "type": "int64", "optional": false }, { "name": "source", "type": "string" },
                { "name": "state", "type": "string" }, { "name": "login", "type": "string" },
                { "name": "open", "type": "bool" }, { "name": "country", "type": "string" } ],
              "relationships": [ { "name": "tags", "destination": "Tag", "inverse": "issues", "toMany": true } ],
              "unique": [["id"]] },
            { "name": "Tag", "attributes": [ { "name": "name", "type": "string", "optional": false } ],
              "relationships": [ { "name": "issues", "destination": "Issue", "inverse": "tags", "toMany": true } ],
              "unique": [["name"]] } ] },
          "feed": { "ndjson": true }, "record": "Issue",
          "mappings": {
            "Issue": { "attributes": {
                "id": "id", "source": { "value": "github" },
                "state": { "from": "s", "map": { "o": "open", "c": "closed" } },
                "login": { "from": "user", "trim": true, "case": "lower" },
                "open": { "from": "s", "map": { "o": true, "c": false } },
                "country": { "from": "cc", "default": "PT" } }\(tagMapping) },
            "Tag": { "attributes": { "name": "name" } } } }
        """.utf8))
    }

    @Test(arguments: [(false, false), (true, false), (true, true)])
    func valueTransformsApplyOnEveryPath(objectPath: Bool, tags: Bool) throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("issues.ndjson", Array("""
            {"id": 1, "s": "o", "user": "  Ann ", "labels": "bug, ui,,bug"}
            {"id": 2, "s": "c", "user": "BO", "cc": "JP"}
            {"id": 3, "s": "x", "user": "cy"}

            """.utf8))
        var options = Importer.Options(feed: feed, store: dir.file("store.sqlite"))
        options.objectPath = objectPath
        let report = try Importer(spec: try Self.transforms(tags: tags), options: options).run()
        #expect(report.imported == 2 && report.rejected == 1)
        #expect(try rows(dir, "SELECT id, source, state, login, open, country FROM Issue ORDER BY id")
                == ["1|github|open|ann|1|PT", "2|github|closed|bo|0|JP"])
        let rejects = try String(contentsOfFile: report.rejectsFile, encoding: .utf8)
        #expect(rejects.contains(#""reason":"state: 'x' is not one of the mapped values ('c', 'o')""#), "\(rejects)")
        if tags { #expect(try rows(dir, "SELECT name FROM Tag ORDER BY name") == ["bug", "ui"]) }
    }

    /// A value `map` does not name takes `otherwise` instead of rejecting the record, on
    /// both write paths; `otherwise` without a `map` is a pipeline error.
    @Test(arguments: [false, true])
    func aMapWithOtherwiseTakesEveryValue(objectPath: Bool) throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("issues.ndjson", Array("""
            {"id": 1, "s": "o"}
            {"id": 2, "s": "x"}
            {"id": 3, "s": 7}
            {"id": 4}

            """.utf8))
        let pipeline = """
            { "model": { "entities": [ { "name": "Issue", "attributes": [
                { "name": "id", "type": "int64", "optional": false }, { "name": "state", "type": "string" } ],
                "unique": [["id"]] } ] },
              "feed": { "ndjson": true }, "record": "Issue",
              "mappings": { "Issue": { "attributes": { "id": "id",
                "state": { "from": "s", "map": { "o": "open", "c": "closed" }, "otherwise": "other" } } } } }
            """
        var options = Importer.Options(feed: feed, store: dir.file("store.sqlite"))
        options.objectPath = objectPath
        let report = try Importer(spec: try PipelineSpec.parse(Array(pipeline.utf8)), options: options).run()
        #expect(report.imported == 4 && report.rejected == 0)
        #expect(try rows(dir, "SELECT id, coalesce(state, 'NULL') FROM Issue ORDER BY id") == ["1|open", "2|other", "3|other", "4|NULL"])
        let alone = pipeline.replacingOccurrences(of: #""map": { "o": "open", "c": "closed" }, "#, with: "")
        let error = #expect(throws: PipelineError.self) { try PipelineSpec.parse(Array(alone.utf8)) }
        #expect(error?.message == #"pipeline.mappings.Issue.attributes.state.otherwise: is what a value "map" does not name becomes; there is no "map""#)
    }

    /// A pipeline error is a value: its kind, its file and its place, not only words.
    @Test func pipelineErrorsNameFilePlaceAndKind() throws {
        let dir = try TemporaryDirectory()
        var text = try String(contentsOfFile: Self.root.appendingPathComponent("Pipelines/cities-rows.json").path, encoding: .utf8)
        text = text.replacingOccurrences(of: #""id": "id", "name": "name""#, with: #""id": "id", "name": {"form": "name"}"#)
        let path = try dir.write("bad.json", Array(text.utf8))
        let error = #expect(throws: PipelineError.self) { try PipelineSpec.load(path: path) }
        #expect(error?.kind == .invalidField)
        #expect(error?.file == path)
        #expect(error?.place == "pipeline.mappings.City.attributes.name")
        #expect(error?.message == "\(path): pipeline.mappings.City.attributes.name: \(error?.problem ?? "")")
        let missing = #expect(throws: PipelineError.self) { try PipelineSpec.load(path: dir.file("none.json")) }
        #expect(missing?.kind == .unreadable && missing?.place == nil)
    }
}
