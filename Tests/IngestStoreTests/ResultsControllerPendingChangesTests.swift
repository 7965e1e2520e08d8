import Foundation
import Synchronization
import Testing
@testable import IngestStore

/// A fetched results controller shows its own context's unsaved changes, told at the end
/// of each perform block (Core Data's `processPendingChanges`), and does not tell them
/// again when the context saves.
@Suite struct ResultsControllerPendingChangesTests {
    typealias State = FetchedResultsControllerTests.State

    /// A context with photos a (10 views), b (20), c (30) saved, and a controller on
    /// photos with views >= 10, by views, whose reported changes are kept in `told`.
    final class Fixture {
        let context: ObjectContext
        let controller: FetchedResultsController
        private var listener: FetchedResultsControllerTests.Listener?
        var told: [ResultsChange] = []
        var shown: State
        let directory: Any

        init(_ backend: StoreBackend, includesPendingChanges: Bool = true) throws {
            let (coordinator, directory) = try TestModel.store(on: backend)
            self.directory = directory
            let context = ObjectContext(coordinator: coordinator, name: "editor")
            self.context = context
            var request = FetchRequest("Photo", predicate: try QueryPredicate(format: "views >= %d", 10),
                                       sortDescriptors: [FetchSortDescriptor("views")])
            request.includesPendingChanges = includesPendingChanges
            let controller = try context.performAndWait {
                for (id, views) in [("a", 10), ("b", 20), ("c", 30)] { insertPhoto(context, id: id).views = .int(Int64(views)) }
                try context.save()
                let controller = try FetchedResultsController(request: request, context: context)
                try controller.performFetch()
                return controller
            }
            self.controller = controller
            shown = context.performAndWait { FetchedResultsControllerTests.state(controller) }
            let listener = FetchedResultsControllerTests.Listener { [weak self] change in
                guard let self else { return }
                told.append(change)
                shown = FetchedResultsControllerTests.apply(change, to: shown)
            }
            self.listener = listener
            context.performAndWait { controller.delegate = listener }
        }

        /// The IDs in order, as shown by the controller, as fetched now, and as rebuilt from what it told.
        func views() -> (controller: [Int64], fetched: [Int64], told: [Int64]) {
            context.performAndWait {
                let ids = { (ids: [ObjectID]) in ids.map { self.context.object(with: $0).views!.intValue! } }
                return (ids(controller.fetchedObjects.map(\.objectID)),
                        ids(try! context.fetch(controller.request).map(\.objectID)),
                        ids(shown.flatMap(\.ids)))
            }
        }
    }

    @Test(arguments: StoreBackend.available) func unsavedChangesAreToldAtTheEndOfEachPerformBlock(backend: StoreBackend) throws {
        let fixture = try Self.Fixture(backend)
        let context = fixture.context
        let inserted = context.performAndWait {
            let photo = insertPhoto(context, id: "d")
            photo.views = 25
            // Not told before the block ends.
            #expect(fixture.told.isEmpty)
            return photo.objectID
        }
        #expect(fixture.told.count == 1)
        #expect(fixture.told[0].inserted.map(\.id) == [inserted] && fixture.told[0].inserted.map(\.at) == [ResultPosition(item: 2, section: 0)])
        #expect(fixture.views() == ([10, 20, 25, 30], [10, 20, 25, 30], [10, 20, 25, 30]))

        // An edit that moves an object, one that takes it out, a delete.
        try context.performAndWait {
            try context.fetch("Photo", where: "id", equals: "a").first!.views = 40
            try context.fetch("Photo", where: "id", equals: "b").first!.views = 5
        }
        context.performAndWait { context.delete(context.object(with: inserted)) }
        #expect(fixture.told.count == 3)
        #expect(fixture.views() == ([30, 40], [30, 40], [30, 40]))
        #expect(try context.performAndWait { try context.count("Photo") } == 3)

        // The save tells nothing new: every change was told already.
        try context.performAndWait { try context.save() }
        #expect(fixture.told.count == 3)
        #expect(fixture.views() == ([30, 40], [30, 40], [30, 40]))
    }

    @Test(arguments: StoreBackend.available) func everyChangeIsToldNotOnlyTheFirstSinceTheSave(backend: StoreBackend) throws {
        let fixture = try Self.Fixture(backend)
        let context = fixture.context
        let (a, d) = try context.performAndWait {
            let a = try context.fetch("Photo", where: "id", equals: "a").first!
            a.views = 15
            let d = insertPhoto(context, id: "d")
            d.views = 12
            return (a, d)
        }
        #expect(fixture.views().told == [12, 15, 20, 30])
        // Changed again in later blocks: both move again.
        context.performAndWait { a.views = 50 }
        context.performAndWait { d.views = 60 }
        #expect(fixture.told.count == 3)
        #expect(fixture.views() == ([20, 30, 50, 60], [20, 30, 50, 60], [20, 30, 50, 60]))
    }

    @Test(arguments: StoreBackend.available) func aRollbackIsToldAsTheChangesItUndoes(backend: StoreBackend) throws {
        let fixture = try Self.Fixture(backend)
        let context = fixture.context
        try context.performAndWait {
            insertPhoto(context, id: "d").views = 25
            try context.fetch("Photo", where: "id", equals: "a").first!.views = 40
            context.delete(try context.fetch("Photo", where: "id", equals: "b").first!)
        }
        #expect(fixture.views() == ([25, 30, 40], [25, 30, 40], [25, 30, 40]))
        context.performAndWait { context.rollback() }
        #expect(fixture.views() == ([10, 20, 30], [10, 20, 30], [10, 20, 30]))
    }

    @Test(arguments: StoreBackend.available) func aSaveInTheSameBlockIsToldOnceWithTheSavedIDs(backend: StoreBackend) throws {
        let fixture = try Self.Fixture(backend)
        let context = fixture.context
        let saved = try context.performAndWait {
            let photo = insertPhoto(context, id: "d")
            photo.views = 15
            try context.save()
            return photo.objectID
        }
        #expect(!saved.isTemporary)
        #expect(fixture.told.count == 1)
        #expect(fixture.told[0].inserted.map(\.id) == [saved])
        #expect(fixture.views() == ([10, 15, 20, 30], [10, 15, 20, 30], [10, 15, 20, 30]))
    }

    @Test(arguments: StoreBackend.available) func aRequestWithoutPendingChangesWaitsForTheSave(backend: StoreBackend) throws {
        let fixture = try Self.Fixture(backend, includesPendingChanges: false)
        let context = fixture.context
        context.performAndWait { insertPhoto(context, id: "d").views = 25 }
        #expect(fixture.told.isEmpty)
        try context.performAndWait { try context.save() }
        #expect(fixture.told.count == 1)
        #expect(fixture.views().controller == [10, 20, 25, 30])
    }

    @Test(arguments: StoreBackend.available) func aMergeBesideUnsavedChangesIsToldOnce(backend: StoreBackend) throws {
        let fixture = try Self.Fixture(backend)
        let context = fixture.context
        let other = ObjectContext(coordinator: context.coordinator, name: "other")
        let notice = try other.performAndWait {
            let notice = Mutex<SaveNotice?>(nil)
            let token = other.coordinator.addSaveObserver { saved in notice.withLock { $0 = saved } }
            defer { other.coordinator.removeSaveObserver(token) }
            insertPhoto(other, id: "e").views = 35
            try other.fetch("Photo", where: "id", equals: "c").first!.views = 1
            try other.save()
            return notice.withLock { $0! }
        }
        context.performAndWait {
            try! context.fetch("Photo", where: "id", equals: "a").first!.views = 50
            context.mergeChanges(fromDidSave: notice)
        }
        // The unsaved edit, then the merge: each told once, and together they give the new state.
        #expect(fixture.told.count == 2)
        #expect(fixture.told.allSatisfy { $0.updated.isEmpty || Set($0.updated.map(\.id)).count == $0.updated.count })
        #expect(fixture.views() == ([20, 35, 50], [20, 35, 50], [20, 35, 50]))
    }

    @Test(arguments: StoreBackend.available) func aChildsSaveIsToldByItsParentsController(backend: StoreBackend) throws {
        let fixture = try Self.Fixture(backend)
        let child = ObjectContext(parent: fixture.context, name: "sheet")
        try child.performAndWait {
            insertPhoto(child, id: "d").views = 12
            #expect(try child.fetch(FetchRequest("Photo")).count == 4)
            try child.save()
        }
        #expect(fixture.told.count == 1)
        #expect(fixture.views() == ([10, 12, 20, 30], [10, 12, 20, 30], [10, 12, 20, 30]))
        #expect(fixture.context.performAndWait { fixture.context.hasChanges })
    }
}
