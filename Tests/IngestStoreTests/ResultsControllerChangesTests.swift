import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// A fetched results controller's `changes` stream: made when a reader first asks for it
/// (nothing is kept for a controller followed through its delegate alone), in order, and
/// bounded by its buffering policy.
@Suite struct ResultsControllerChangesTests {
    /// A viewer context that merges a writer's saves, and a controller on it over all photos by id.
    static func setUp(_ backend: StoreBackend) throws -> (viewer: ObjectContext, writer: ObjectContext, FetchedResultsController, Any) {
        let (coordinator, directory) = try TestModel.store(on: backend)
        let viewer = ObjectContext(coordinator: coordinator, name: "viewer")
        let writer = ObjectContext(coordinator: coordinator, name: "writer")
        let controller = try viewer.performAndWait { () throws -> FetchedResultsController in
            viewer.automaticallyMergesChangesFromCoordinator = true
            let controller = try FetchedResultsController(request: FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("id")]),
                                                          context: viewer)
            try controller.performFetch()
            return controller
        }
        return (viewer, writer, controller, directory)
    }

    /// Saves `count` new photos named `prefix`0… in one save, and waits for the viewer to
    /// merge it; returns their IDs.
    @discardableResult
    static func save(_ count: Int, _ prefix: String, _ writer: ObjectContext, _ viewer: ObjectContext) throws -> Set<ObjectID> {
        let ids = try writer.performAndWait {
            let photos = (0..<count).map { insertPhoto(writer, id: "\(prefix)\($0)") }
            try writer.save()
            writer.reset()
            return Set(photos.map(\.objectID))
        }
        // The merge was queued on the viewer's queue during the save: this runs after it.
        viewer.performAndWait {}
        return ids
    }

    /// 200 merges of 50 photos (40 without `INGEST_STRESS`) heard by a delegate alone: no
    /// stream was made, so nothing was kept; a reader that asks afterwards gets the next
    /// change first, not the merges before it.
    @Test(arguments: StoreBackend.available) func aControllerFollowedByItsDelegateAloneKeepsNoChange(backend: StoreBackend) async throws {
        let (viewer, writer, controller, directory) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        var heard = 0
        let listener = FetchedResultsControllerTests.Listener { _ in heard += 1 }
        viewer.performAndWait { controller.delegate = listener }
        let rounds = Stress.count(200, quick: 40)
        for round in 0..<rounds { try Self.save(50, "r\(round)-", writer, viewer) }
        #expect(viewer.performAndWait { heard } == rounds)
        #expect(!controller.changeStream.isMade)
        var reader = controller.changes.makeAsyncIterator()
        #expect(controller.changeStream.isMade)
        let fresh = try Self.save(3, "late-", writer, viewer)
        let first = try #require(await reader.next())
        #expect(Set(first.inserted.map(\.id)) == fresh)
        #expect(first.inserted.count == 3)
        #expect(viewer.performAndWait { heard } == rounds + 1)
    }

    /// A reader that asked first gets every change, in the order of the saves.
    @Test(arguments: StoreBackend.available) func aReaderGetsEveryChangeInOrder(backend: StoreBackend) async throws {
        let (viewer, writer, controller, directory) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        var reader = controller.changes.makeAsyncIterator()
        var saved: [Set<ObjectID>] = []
        for round in 0..<5 { saved.append(try Self.save(round + 1, "r\(round)-", writer, viewer)) }
        for round in 0..<5 {
            let change = try #require(await reader.next())
            #expect(Set(change.inserted.map(\.id)) == saved[round], "change \(round)")
        }
    }

    /// A reader that falls behind keeps what the buffering policy says: with the newest
    /// three, the fourth and fifth saves' changes wait, after the third's.
    @Test func aReaderBehindKeepsWhatItsBufferingPolicySays() async throws {
        let (viewer, writer, controller, directory) = try Self.setUp(.memory)
        defer { withExtendedLifetime(directory) {} }
        #expect(FetchedResultsController.defaultChangesBufferLimit == 100)
        controller.changesBufferingPolicy = .bufferingNewest(3)
        var reader = controller.changes.makeAsyncIterator()
        var saved: [Set<ObjectID>] = []
        for round in 0..<5 { saved.append(try Self.save(1, "r\(round)-", writer, viewer)) }
        for round in 2..<5 {
            let change = try #require(await reader.next())
            #expect(Set(change.inserted.map(\.id)) == saved[round], "change \(round)")
        }
        // The same stream while its reader reads: asking again makes no other.
        let next = try Self.save(2, "after-", writer, viewer)
        var again = controller.changes.makeAsyncIterator()
        #expect(Set(try #require(await again.next()).inserted.map(\.id)) == next)
    }
}
