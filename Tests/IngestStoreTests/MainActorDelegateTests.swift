import Testing
@testable import IngestStore

/// A fetched results controller's delegate that is a `@MainActor` class (a view model),
/// without Swift 6.2's isolated conformances: the idiom the README and DocC show.
@Suite struct MainActorDelegateTests {
    /// The view model: main-actor state, told of changes by a nonisolated method that
    /// asserts it runs on the main actor (a `.main` context delivers there).
    @MainActor final class PhotoList: FetchedResultsControllerDelegate {
        var titles: [String] = []
        var changes = 0

        nonisolated func controller(_ controller: FetchedResultsController, didChange change: ResultsChange) {
            let titles = controller.fetchedObjects.map { $0.title?.stringValue ?? "" }
            MainActor.assumeIsolated {
                self.titles = titles
                self.changes += 1
            }
        }
    }

    @MainActor @Test(arguments: StoreBackend.available)
    func aMainActorViewModelIsToldOfChangesOnTheMainActor(backend: StoreBackend) async throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let view = ObjectContext(.main, coordinator: coordinator, name: "view")
        let list = PhotoList()
        let controller = try view.performAndWait {
            view.automaticallyMergesChangesFromCoordinator = true
            let controller = try FetchedResultsController(request: FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("title")]),
                                                          context: view)
            controller.delegate = list
            try controller.performFetch()
            return controller
        }
        let worker = ObjectContext(coordinator: coordinator, name: "worker")
        try await worker.perform { worker in
            for (id, title) in [("2", "Bridge"), ("1", "Harbour")] {
                let photo = worker.insert("Photo")
                photo.id = .string(id)
                photo.title = .string(title)
            }
            try worker.save()
        }
        // The merge runs on the main queue, after this test yields it.
        for _ in 0..<200 where list.changes == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(list.changes == 1)
        #expect(list.titles == ["Bridge", "Harbour"])
        _ = controller
    }
}
