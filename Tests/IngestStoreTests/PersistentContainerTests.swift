import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// `PersistentContainer` (Core Data's `NSPersistentContainer`): a view context on the main
/// queue that merges what background contexts save, on every backend.
@Suite struct PersistentContainerTests {
    /// A container on a new, empty store of `backend`; keep the directory alive as long as it.
    static func container(on backend: StoreBackend) throws -> (PersistentContainer, TemporaryDirectory) {
        let (coordinator, directory) = try TestModel.store(on: backend)
        return (PersistentContainer(coordinator: coordinator), directory)
    }

    /// The view context holds a photo it fetched; a background context changes it and
    /// inserts another: the view context's object shows the new title, and it heard of both.
    @MainActor
    @Test(arguments: StoreBackend.available) func theViewContextMergesABackgroundContextsSave(backend: StoreBackend) async throws {
        let (container, directory) = try Self.container(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let view = container.viewContext
        #expect(view.kind == .main)
        #expect(view.performAndWait { view.automaticallyMergesChangesFromCoordinator })
        let background = container.newBackgroundContext()
        #expect(background.kind == .privateQueue && background.name == "view-background-1")
        let first = try background.performAndWait {
            let photo = insertPhoto(background, id: "p1", title: "Harbour")
            try background.save()
            return photo.objectID
        }
        // The first save's merge runs on a later turn of the main queue: heard after it is the second's only.
        await Task.yield()
        let shown = try view.performAndWait { try view.existingObject(with: first) }
        var heard = ObjectsDidChange()
        view.performAndWait { view.onObjectsDidChange = { heard.inserted.formUnion($0.inserted); heard.refreshed.formUnion($0.refreshed) } }
        let second = try background.performAndWait {
            background.object(with: first).title = .string("Harbour at night")
            let photo = insertPhoto(background, id: "p2", title: "Quay")
            try background.save()
            return photo.objectID
        }
        // The merge was queued on the main queue during the save: a later main-actor turn runs after it.
        await Task.yield()
        await MainActor.run {}
        view.performAndWait {
            #expect(shown.title == .string("Harbour at night"))
            #expect(heard.inserted == [second])
            #expect(heard.refreshed == [first])
        }
    }

    /// The callback form returns at once and runs on a queue of its own; the async form
    /// returns the closure's value. The view context then holds exactly what they saved.
    @MainActor
    @Test(arguments: StoreBackend.available) func performBackgroundTaskSavesAreInTheViewContextWithTheirValues(backend: StoreBackend) async throws {
        let (container, directory) = try Self.container(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let view = container.viewContext
        var merged: [SaveNotice] = []
        view.performAndWait { view.onDidMerge = { merged.append($0) } }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            container.performBackgroundTask { context in
                #expect(context.name == "view-background-1")
                for i in 1...3 { insertPhoto(context, id: "p\(i)", title: "T\(i)").views = .int(Int64(i * 10)) }
                #expect(throws: Never.self) { try context.save() }
                done.resume()
            }
        }
        let renamed = try await container.performBackgroundTask { context in
            let photo = try context.fetch("Photo", where: "id", equals: "p2")[0]
            photo.title = .string("Renamed")
            photo.views = .int(99)
            try context.save()
            return photo.objectID
        }
        await MainActor.run {}
        try view.performAndWait {
            #expect(merged.count == 2)
            #expect(merged.first?.inserted.count == 3)
            #expect(merged.last?.updated == [renamed])
            let photos = try view.fetch(FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("id")]))
            #expect(photos.map { $0.id?.stringValue } == ["p1", "p2", "p3"])
            #expect(photos.map { $0.title?.stringValue } == ["T1", "Renamed", "T3"])
            #expect(photos.map { $0.views?.intValue } == [10, 99, 30])
        }
    }

    /// The README's container example, as written there (on a store in memory).
    @MainActor
    @Test func theReadmesContainerExampleRuns() async throws {
        let model = TestModel.model
        let container = try PersistentContainer(inMemory: model)
        try await container.performBackgroundTask { context in
            let photo = context.insert("Photo")
            photo.id = .string("p1")
            photo.title = .string("Harbour")
            try context.save()
        }
        let view = container.viewContext
        let titles = try view.performAndWait { try view.fetch("Photo").map(\.title) }
        #expect(titles == [.string("Harbour")])
    }

    /// The view context is made once, on the main actor, and named after the container.
    @MainActor
    @Test func theViewContextIsMadeOnceAndNamedAfterTheContainer() throws {
        let container = try PersistentContainer(inMemory: TestModel.model, name: "photos")
        #expect(container.viewContext === container.viewContext)
        #expect(container.viewContext.name == "photos")
        #expect(container.persistentStoreCoordinator.isInMemory)
        #expect(container.model == container.persistentStoreCoordinator.model)
    }

    /// A location the coordinator cannot open is refused by the initializer, with an error
    /// to match: an unknown scheme, a file that is not a store, a directory that does not exist.
    @Test func anInvalidLocationThrowsAMatchableError() throws {
        let directory = try TemporaryDirectory()
        #expect(throws: StoreError.notAStore(path: "ftp://example.com/photos",
                                             reason: "a store URL is file: (SQLite), postgresql: (PostgreSQL) or memory:, not ftp:")) {
            try PersistentContainer(model: TestModel.model, url: URL(string: "ftp://example.com/photos")!)
        }
        let text = try directory.write("notes.txt", Array("not a database, just some text that SQLite will not read".utf8))
        let notAStore = #expect(throws: StoreError.self) { try PersistentContainer(model: TestModel.model, path: text) }
        guard case .notAStore(let path, _)? = notAStore else {
            Issue.record("expected .notAStore, got \(String(describing: notAStore))")
            return
        }
        #expect(path == text)
        let missing = #expect(throws: StoreError.self) {
            try PersistentContainer(model: TestModel.model, url: URL(fileURLWithPath: directory.file("no/such/dir/store.sqlite")))
        }
        #expect(missing?.reason == .other)
        #expect(throws: ModelError.self) { try PersistentContainer(inMemory: Model(entities: [])) }
    }
}
