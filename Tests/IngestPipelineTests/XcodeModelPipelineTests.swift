import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// A pipeline naming its model file (`"model": "Photos.xcdatamodeld"`) instead of embedding it.
@Suite struct XcodeModelPipelineTests {
    static let package = PipelineSpecTests.root.appendingPathComponent("Fixtures/models/Photos.xcdatamodeld")

    static func pipelineBeside(_ directory: TemporaryDirectory) throws -> String {
        try FileManager.default.copyItem(at: package, to: URL(fileURLWithPath: directory.file("Photos.xcdatamodeld")))
        return try directory.write("pipeline.json", Array("""
            {"model": "Photos.xcdatamodeld", "record": "Photo",
             "mappings": {"Photo": {"attributes": {"id": "id", "title": "title", "views": "views"}}}}
            """.utf8))
    }

    @Test func aPipelineNamingAnXcodeModelImportsWithIt() throws {
        let directory = try TemporaryDirectory()
        let pipeline = try Self.pipelineBeside(directory)
        let spec = try PipelineSpec.load(path: pipeline)
        #expect(spec.model == (try Model.load(xcdatamodel: Self.package)))
        let feed = try directory.write("feed.json", Array(#"[{"id": "a", "title": "One", "views": 3}, {"id": "b", "views": 5}]"#.utf8))
        let store = directory.file("store.sqlite")
        let outcome = try IngestBinary.run(["import", feed, "--pipeline", pipeline, "--store", store, "--quiet"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(try IngestBinary.run(["query", store, "Photo", "--sort", "id", "--fields", "id,views,rating", "--format", "csv"]).stdout
                == "id,views,rating\r\na,3,2.5\r\nb,5,2.5\r\n")
        // What a run keeps of it (a joined process on another machine has no model file): the model embedded.
        let kept = try PipelineSpec.resolvedText(path: pipeline)
        #expect(try PipelineSpec.parse(kept).model == spec.model)
    }

    @Test func aModelFileThatCannotBeReadIsNamed() throws {
        let directory = try TemporaryDirectory()
        let pipeline = try directory.write("pipeline.json", Array(#"{"model": "Missing.xcdatamodeld", "record": "Photo", "mappings": {}}"#.utf8))
        #expect(throws: PipelineError.self) { try PipelineSpec.load(path: pipeline) }
        do {
            _ = try PipelineSpec.load(path: pipeline)
        } catch let error as PipelineError {
            #expect(error.message == "\(pipeline): pipeline.model: \(directory.file("Missing.xcdatamodeld")): no .xcdatamodeld or .xcdatamodel directory there")
        }
        #expect(throws: PipelineError("pipeline.model: names a model file (Missing.xcdatamodeld), which only a pipeline read from its file can load")) {
            try PipelineSpec.parse(Array(#"{"model": "Missing.xcdatamodeld", "record": "Photo", "mappings": {}}"#.utf8))
        }
    }

    @Test func evolvingAPipelineThatNamesItsModelFileIsRefused() throws {
        let directory = try TemporaryDirectory()
        let pipeline = try Self.pipelineBeside(directory)
        let before = try String(contentsOfFile: pipeline, encoding: .utf8)
        let feed = try directory.write("feed.json", Array(#"[{"id": "a", "title": "One", "views": 3, "camera": "X100"}]"#.utf8))
        let refused = try IngestBinary.run(["import", feed, "--pipeline", pipeline, "--store", directory.file("s.sqlite"), "--evolve", "--quiet"])
        #expect(refused.status == 1)
        #expect(refused.stderr == "ingest: \(pipeline): the pipeline names its model file (Photos.xcdatamodeld), which --evolve cannot change: add the attributes to the model, then import\n")
        #expect(try String(contentsOfFile: pipeline, encoding: .utf8) == before)
    }
}
