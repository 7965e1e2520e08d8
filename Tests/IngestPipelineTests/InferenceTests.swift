import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// `ingest infer` and imports without a pipeline: a feed whose inferred pipeline is
/// imported gives the counts Python computes from the same feed.
@Suite struct InferenceTests {
    static let fixtures = PipelineSpecTests.root.appendingPathComponent("Fixtures/feeds").path

    /// Python's count of `expression` over the feed's records (`records`), or nil (having
    /// said why) where python3 is missing.
    /// The counts Python computes from `feed`; without /usr/bin/python3 the test is
    /// cancelled, and reported as skipped, after the checks it made.
    static func python(_ feed: String, _ load: String, _ expressions: [String: String]) throws -> [String: Int] {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else {
            try Test.cancel("/usr/bin/python3 is missing: the counts are not compared with Python's (apt-get install python3)")
        }
        let script = """
            import json, sys
            path = sys.argv[1]
            text = open(path, encoding='utf-8').read()
            \(load)
            counts = {\(expressions.map { "'\($0.key)': \($0.value)" }.joined(separator: ", "))}
            print(json.dumps(counts))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, feed]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return try JSONDecoder().decode([String: Int].self, from: data)
    }

    func importInferred(_ feed: String) throws -> (PipelineInference.Inference, ImportReport) {
        let dir = try TemporaryDirectory()
        let inference = try PipelineInference.infer(feed: feed)
        let report = try Importer(spec: inference.spec, options: .init(feed: feed, store: dir.file("store.sqlite"))).run()
        return (inference, report)
    }

    @Test func aGeneratedFeedImportsWithTheCountsPythonComputes() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("photos.json")
        try FeedGenerator(records: 3_000, seed: 5).write(to: feed)
        let (inference, report) = try importInferred(feed)
        #expect(inference.spec.recordEntity == "Photo")
        let photo = try #require(inference.spec.model.entity("Photo"))
        #expect(photo.uniquenessConstraints == [["id"]])
        #expect(photo.attribute("uploadDate")?.type == .date)
        #expect(photo.attribute("views")?.type == .int64)
        #expect(photo.attribute("latitude")?.type == .double)
        #expect(inference.spec.mappings["Photo"]?.attributes.first { $0.attribute == "tags" }?.asJSON == true)
        #expect(report.rejected == 0)
        let expected = try Self.python(feed, "records = json.loads(text)", [
            "Photo": "len({r['id'] for r in records})",
            "Photographer": "len({r['photographer']['id'] for r in records if isinstance(r.get('photographer'), dict)})",
        ])
        #expect(report.counts == expected)
    }

    // A trait, not a cancel inside: a cancelled test case is not reported, a disabled test is.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
                   "/usr/bin/python3 is missing: the counts are not compared with Python's (apt-get install python3)"),
          arguments: [
        ("events-keyed.json", "records = [dict(v, **{'@key': k}) for k, v in json.loads(text)['events'].items()]",
         ["Event": "len(records)", "Actor": "len({r['actor']['id'] for r in records if 'actor' in r})"]),
        ("events-typed.ndjson", "records = [json.loads(l) for l in text.splitlines() if l.strip()]",
         ["EventsTyped": "len({r['id'] for r in records})", "Actor": "len({r['actor']['id'] for r in records})"]),
        ("geojson.json", "records = json.loads(text)['features']", ["Feature": "len({r['id'] for r in records})"]),
        ("cities-rows.ndjson", "rows = [json.loads(l) for l in text.splitlines() if l.strip()]; records = [r for r in rows[1:] if len(r) == len(rows[0])]",
         ["CitiesRow": "len({r[0] for r in records})"]),
    ])
    func fixturesImportWithTheCountsPythonComputes(_ name: String, _ load: String, _ expressions: [String: String]) throws {
        let feed = Self.fixtures + "/" + name
        let (inference, report) = try importInferred(feed)
        #expect(!inference.report.isEmpty)
        let expected = try Self.python(feed, load, expressions)
        #expect(report.counts == expected, "\(inference.text)")
    }

    @Test func importWithoutAPipelineInfersOneAndSaysSo() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("photos.json")
        try FeedGenerator(records: 200).write(to: feed)
        let store = dir.file("store.sqlite")
        let first = try IngestBinary.run(["import", feed, "--store", store])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("ingest: no --pipeline: inferred one from the feed and kept it as \(store).pipeline.json"))
        #expect(first.stderr.contains("Photo.uploadDate: date (200 ISO 8601 strings)"), "\(first.stderr)")
        #expect(first.stdout.contains("  pipeline: inferred from this feed (\(store).pipeline.json)"))
        let status = try IngestBinary.run(["status", store])
        #expect(status.stdout.contains("pipeline: \(store).pipeline.json (inferred from the feed)"), "\(status.stdout)")
        // The next feed maps the same way: the kept pipeline is used again.
        let again = try IngestBinary.run(["import", feed, "--store", store, "--quiet"])
        #expect(again.status == 0 && again.stderr.isEmpty, "\(again.stderr)")
        #expect(try ImportStatus.read(store: store).runs.count == 2)
        // Its summary says so, not that this feed was inferred.
        let other = dir.file("more.json")
        try FeedGenerator(records: 50, seed: 9).write(to: other)
        let third = try IngestBinary.run(["import", other, "--store", store])
        #expect(third.status == 0, "\(third.stderr)")
        #expect(third.stdout.contains("  pipeline: \(store).pipeline.json, inferred for this store by an earlier import"), "\(third.stdout)")
        #expect(!third.stdout.contains("inferred from this feed"))
    }

    @Test func inferWritesAPipelineAndExplainsIt() throws {
        let dir = try TemporaryDirectory()
        let output = dir.file("pipeline.json")
        let outcome = try IngestBinary.run(["infer", Self.fixtures + "/geojson.json", "-o", output])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("feed: records in the array at 'features'"))
        #expect(outcome.stderr.contains("Feature.geometry: nested objects without an id-like field → flattened into Feature as geometry_…"))
        let spec = try PipelineSpec.load(path: output)
        #expect(spec.mappings["Feature"]?.attributes.contains { $0.attribute == "geometry_type" && $0.from.description == "geometry.type" } == true)
    }
}
