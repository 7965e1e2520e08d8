import Foundation
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// An editor in this process and an importer process change the same photo: the editor's
/// save finds the importer's change by optimistic locking, and its merge policy decides.
@Suite(.serialized) struct EditorAndImporterTests {
    typealias Backend = HistoryImportTests.Backend

    static func feed(_ path: String, title: String, views: Int) throws {
        let text = """
        [{"id":"p1","title":"\(title)","views":\(views),"photographer":{"id":"ana","name":"Ana"}},
         {"id":"p2","title":"Bridge","views":2,"photographer":{"id":"bo","name":"Bo"}}]
        """
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    static func importFeed(_ feed: String, into store: HistoryImportTests.Store) throws {
        let outcome = try IngestBinary.run(HistoryImportTests.importArguments(feed, store, workers: 1))
        #expect(outcome.status == 0, "\(outcome.stderr)")
    }

    @Test(arguments: Backend.available) func anEditorsSaveMeetsTheImportersChangeAndResolvesItByPolicy(backend: Backend) throws {
        let store = try HistoryImportTests.Store(backend)
        let first = store.directory.file("first.json"), second = store.directory.file("second.json")
        try Self.feed(first, title: "Harbour", views: 1)
        try Self.feed(second, title: "Dock", views: 7)
        try Self.importFeed(first, into: store)

        let coordinator = try store.open(readOnly: false)
        let editor = ObjectContext(coordinator: coordinator, name: "editor")
        let photo = try editor.performAndWait {
            let photo = try #require(try editor.fetch(FetchRequest("Photo", predicate: try QueryPredicate(format: "id == 'p1'"))).first)
            photo.title = "Pier"
            return photo
        }
        // The importer's second run updates p1 (the feed's update rule) while the editor holds it.
        try Self.importFeed(second, into: store)

        let error = try editor.performAndWait { try #require(throws: StoreError.self) { try editor.save() } }
        #expect(error.description == "the save conflicts with changes made in the store since the objects were read: "
            + "Photo \"p1\": the store changed title (read \"Harbour\", stored \"Dock\", here \"Pier\"), views (read 1, stored 7)")
        try editor.performAndWait {
            editor.mergePolicy = .mergeByPropertyObjectTrump
            try editor.save()
            #expect(photo.title == "Pier" && photo.views == 7)
        }
        let reader = ObjectContext(coordinator: try store.open())
        try reader.performAndWait {
            let photos = try reader.fetch(FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("id")]))
            #expect(photos.map { "\($0.id!) \($0.title!) \($0.views!)" } == ["\"p1\" \"Pier\" 7", "\"p2\" \"Bridge\" 2"])
        }
    }
}
