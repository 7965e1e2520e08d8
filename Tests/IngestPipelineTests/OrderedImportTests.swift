import Foundation
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// A record's list fills an ordered to-many in the list's order, and a later record
/// replacing the list (the default update rule) gives it the new order.
@Suite(.serialized) struct OrderedImportTests {
    typealias Backend = HistoryImportTests.Backend

    static let pipeline = #"""
        {"model": {"entities": [
            {"name": "Playlist", "attributes": [{"name": "id", "type": "string", "optional": false}], "unique": [["id"]],
             "relationships": [{"name": "tracks", "destination": "Track", "inverse": "playlists", "toMany": true, "ordered": true}]},
            {"name": "Track", "attributes": [{"name": "id", "type": "string", "optional": false}], "unique": [["id"]],
             "relationships": [{"name": "playlists", "destination": "Playlist", "inverse": "tracks", "toMany": true}]}]},
         "feed": {"ndjson": true}, "record": "Playlist",
         "mappings": {"Playlist": {"attributes": {"id": "id"}, "relationships": {"tracks": "tracks"}},
                      "Track": {"attributes": {"id": "id"}}}}
        """#

    @Test(arguments: Backend.available) func aRecordsListIsTheRelationshipsOrder(backend: Backend) throws {
        let store = try HistoryImportTests.Store(backend)
        let pipeline = store.directory.file("playlists.json")
        try Self.pipeline.write(toFile: pipeline, atomically: true, encoding: .utf8)
        func importLines(_ lines: String, _ name: String) throws {
            let feed = store.directory.file(name)
            try lines.write(toFile: feed, atomically: true, encoding: .utf8)
            let outcome = try IngestBinary.run(["import", feed, "--pipeline", pipeline, "--store", store.target, "--quiet"])
            #expect(outcome.status == 0, "\(outcome.stderr)")
        }
        func order() throws -> [String] {
            let context = ObjectContext(coordinator: try store.open(), name: "reader")
            return try context.performAndWait {
                let playlist = try #require(try context.fetch("Playlist").first)
                return playlist.objects(forKey: "tracks").map { $0.id!.stringValue! }
            }
        }
        try importLines(#"{"id": "mix", "tracks": [{"id": "c"}, {"id": "a"}, {"id": "b"}]}"# + "\n", "first.ndjson")
        #expect(try order() == ["c", "a", "b"])
        try importLines(#"{"id": "mix", "tracks": [{"id": "b"}, {"id": "d"}, {"id": "c"}]}"# + "\n", "second.ndjson")
        #expect(try order() == ["b", "d", "c"])
    }
}
