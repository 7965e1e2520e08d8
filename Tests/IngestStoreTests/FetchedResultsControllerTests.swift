import Foundation
import Testing
@testable import IngestStore

@Suite struct FetchedResultsControllerTests {
    /// The state a table shows: section names and the IDs in each.
    typealias State = [(name: String, ids: [ObjectID])]

    static func state(_ controller: FetchedResultsController) -> State {
        controller.sections.map { ($0.name, $0.objects.map(\.objectID)) }
    }

    /// Applies a change the way a table view applies a batch update.
    static func apply(_ change: ResultsChange, to old: State) -> State {
        var state = old
        let removals = (change.deleted.map(\.at) + change.moved.map(\.from)).sorted(by: >)
        for path in removals { state[path.section].ids.remove(at: path.item) }
        for (index, _) in change.deletedSections.sorted(by: { $0.index > $1.index }) {
            precondition(state[index].ids.isEmpty, "a deleted section still has objects")
            state.remove(at: index)
        }
        for (index, name) in change.insertedSections.sorted(by: { $0.index < $1.index }) { state.insert((name, []), at: index) }
        let additions = (change.inserted.map { ($0.at, $0.id) } + change.moved.map { ($0.to, $0.id) }).sorted { $0.0 < $1.0 }
        for (path, id) in additions { state[path.section].ids.insert(id, at: path.item) }
        return state
    }

    static func same(_ a: State, _ b: State) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.name == $1.name && $0.ids == $1.ids }
    }

    @Test(arguments: StoreBackend.available) func reportedChangesReproduceTheNewStateOverRandomMergedSaves(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let sectionNames = ["A", "B", "C", "D", "E"]
        let viewer = ObjectContext(coordinator: coordinator, name: "viewer")
        let writer = ObjectContext(coordinator: coordinator, name: "writer")
        var seed: UInt64 = 0x1234_5678
        func next(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        let notices = Mutex2<[SaveNotice]>([])
        let token = coordinator.addSaveObserver { notice in notices.set(notices.get() + [notice]) }
        defer { coordinator.removeSaveObserver(token) }

        let request = FetchRequest("Photo", predicate: try QueryPredicate(format: "views >= 0"),
                                   sortDescriptors: [FetchSortDescriptor("title"), FetchSortDescriptor("views", ascending: false)])
        let controller = try viewer.performAndWait { () throws -> FetchedResultsController in
            let controller = try FetchedResultsController(request: request, context: viewer, sectionNameKeyPath: "title")
            try controller.performFetch()
            return controller
        }
        var changeCount = 0
        var counter = 0
        for round in 0..<120 {
            try writer.performAndWait {
                for _ in 0..<(1 + next(4)) {
                    let existing = try writer.fetch("Photo")
                    switch (existing.isEmpty ? 0 : next(10)) {
                    case 0...3:
                        counter += 1
                        let photo = insertPhoto(writer, id: "p\(counter)", title: sectionNames[next(sectionNames.count)])
                        photo.views = .int(Int64(next(50)) - (next(8) == 0 ? 60 : 0))  // some fall outside the predicate
                    case 4...5:
                        existing[next(existing.count)].title = .string(sectionNames[next(sectionNames.count)])
                    case 6...7:
                        existing[next(existing.count)].views = .int(Int64(next(50) - 5))
                    default:
                        writer.delete(existing[next(existing.count)])
                    }
                }
                try writer.save()
                writer.reset()
            }
            let batch = notices.get()
            notices.set([])
            try viewer.performAndWait {
                for notice in batch {
                    let before = Self.state(controller)
                    var heard: [ResultsChange] = []
                    let listener = Listener { heard.append($0) }
                    controller.delegate = listener
                    viewer.mergeChanges(fromDidSave: notice)
                    let after = Self.state(controller)
                    let applied = heard.reduce(before) { Self.apply($1, to: $0) }
                    #expect(Self.same(applied, after), "round \(round)")
                    changeCount += notice.inserted.count + notice.updated.count + notice.deleted.count
                    // And the controller's state is what a fresh fetch gives.
                    let fresh = try FetchedResultsController(request: request, context: viewer, sectionNameKeyPath: "title")
                    try fresh.performFetch()
                    #expect(Self.same(Self.state(fresh), after), "round \(round): differs from a fresh fetch")
                }
            }
        }
        #expect(changeCount >= 200)
    }

    @Test(arguments: StoreBackend.available) func sectionKeyMustBeTheFirstSortKey(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        #expect(throws: QueryPredicateError("the section key title must be the first sort key (it is views)", column: 0)) {
            try FetchedResultsController(request: FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("views")]),
                                         context: context, sectionNameKeyPath: "title")
        }
        #expect(throws: QueryPredicateError("a fetched results controller needs at least one sort descriptor", column: 0)) {
            try FetchedResultsController(request: FetchRequest("Photo"), context: context)
        }
    }

    final class Listener: FetchedResultsControllerDelegate {
        let body: (ResultsChange) -> Void
        init(_ body: @escaping (ResultsChange) -> Void) { self.body = body }
        func controller(_ controller: FetchedResultsController, didChange change: ResultsChange) { body(change) }
    }
}

@Suite struct ResultsControllerOwnSaveTests {
    @Test(arguments: StoreBackend.available) func aSaveOfItsOwnContextIsReportedToo(backend: StoreBackend) async throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "own")
        let (controller, first): (FetchedResultsController, ObjectID) = try context.performAndWait {
            let first = insertPhoto(context, id: "b", title: "B")
            try context.save()
            let controller = try FetchedResultsController(
                request: FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("title")]), context: context,
                sectionNameKeyPath: "title")
            try controller.performFetch()
            return (controller, first.objectID)
        }
        var iterator = controller.changes.makeAsyncIterator()
        let inserted: ObjectID = try context.performAndWait {
            let photo = insertPhoto(context, id: "a", title: "A")
            try context.save()
            return photo.objectID
        }
        let change = try #require(await iterator.next())
        #expect(change.insertedSections.map(\.name) == ["A"])
        #expect(change.inserted.map(\.id) == [inserted])
        #expect(change.inserted.map(\.at) == [ResultPosition(item: 0, section: 0)])
        context.performAndWait {
            #expect(controller.sections.map(\.name) == ["A", "B"])
            #expect(controller.object(at: ResultPosition(item: 0, section: 1)).objectID == first)
        }
    }
}

@Suite struct ResultsControllerWindowTests {
    /// A "top 5" controller keeps five after merges: ten better photos saved elsewhere push
    /// the first five out, and a deleted one lets the next in; every delta, applied, gives
    /// the new state, which is what the same request fetches.
    @Test(arguments: StoreBackend.available) func aControllerWithAFetchLimitKeepsItsWindowAcrossMerges(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let viewer = ObjectContext(coordinator: coordinator, name: "viewer")
        let writer = ObjectContext(coordinator: coordinator, name: "writer")
        viewer.performAndWait { viewer.automaticallyMergesChangesFromCoordinator = true }
        try writer.performAndWait {
            for i in 0..<5 { insertPhoto(writer, id: "low\(i)").views = .int(Int64(i)) }
            try writer.save()
        }
        var request = FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("views", ascending: false)])
        request.fetchLimit = 5
        let heard = Mutex2<[ResultsChange]>([])
        let listener = FetchedResultsControllerTests.Listener { heard.set(heard.get() + [$0]) }
        let (controller, before) = try viewer.performAndWait { () throws -> (FetchedResultsController, FetchedResultsControllerTests.State) in
            let controller = try FetchedResultsController(request: request, context: viewer)
            try controller.performFetch()
            controller.delegate = listener
            return (controller, FetchedResultsControllerTests.state(controller))
        }
        try writer.performAndWait {
            for i in 0..<10 { insertPhoto(writer, id: "high\(i)").views = .int(Int64(100 + i)) }
            try writer.save()
        }
        func views() -> [Int64] {
            viewer.performAndWait { controller.fetchedObjects.compactMap { $0.views?.intValue } }
        }
        #expect(views() == [109, 108, 107, 106, 105])
        try writer.performAndWait {
            try writer.delete(writer.fetch("Photo", where: "id", equals: "high9")[0])
            try writer.save()
        }
        #expect(views() == [108, 107, 106, 105, 104])
        try viewer.performAndWait {
            let applied = heard.get().reduce(before) { FetchedResultsControllerTests.apply($1, to: $0) }
            #expect(FetchedResultsControllerTests.same(applied, FetchedResultsControllerTests.state(controller)))
            let fetched = try viewer.fetch(request).map(\.objectID)
            #expect(controller.fetchedObjects.map(\.objectID) == fetched)
        }
    }
}
