import Foundation
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// A pipeline whose model has transient attributes imports its stored ones; mapping onto a
/// transient one is refused.
@Suite struct TransientImportTests {
    static func pipeline(mapsDraft: Bool = false) -> String {
        """
        { "model": { "entities": [
            { "name": "Book", "attributes": [
                { "name": "draft", "type": "string", "transient": true },
                { "name": "id", "type": "string", "optional": false },
                { "name": "title", "type": "string" } ],
              "unique": [["id"]] } ] },
          "feed": { "ndjson": true },
          "record": "Book",
          "mappings": { "Book": { "attributes": { "id": "id", "title": "title"\(mapsDraft ? #", "draft": "title""# : "") } } } }
        """
    }

    @Test(arguments: [false, true])
    func theStoredAttributesAreImportedPastATransientOne(objectPath: Bool) throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.ndjson", Array(#"{"id":"b1","title":"One"}\#n{"id":"b2","title":"Two"}\#n"#.utf8))
        var options = Importer.Options(feed: feed, store: dir.file("store.sqlite"), workers: 1, saveEvery: 100, chunkSize: 100)
        options.objectPath = objectPath
        let report = try Importer(spec: try PipelineSpec.parse(Array(Self.pipeline().utf8)), options: options).run()
        #expect(report.imported == 2 && report.rejectedThisRun == 0)
        #expect(try storeRows(dir.file("store.sqlite"), "SELECT id || ' ' || title FROM Book ORDER BY id") == ["b1 One", "b2 Two"])
    }

    @Test func mappingATransientAttributeIsRefused() throws {
        #expect(throws: PipelineError(at: "pipeline.mappings.Book.attributes.draft",
                                      "Book.draft is transient: the store does not keep it, so an import cannot fill it")) {
            try PipelineSpec.parse(Array(Self.pipeline(mapsDraft: true).utf8))
        }
    }
}
