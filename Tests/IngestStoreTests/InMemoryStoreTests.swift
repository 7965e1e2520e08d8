import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// A store held in memory (Core Data's `NSInMemoryStoreType`). The whole store suite also
/// runs on it (`StoreBackend.memory`); these pin down what is its own.
@Suite struct InMemoryStoreTests {
    @Test func aStoreInMemoryIsNamedByItsIDAndSharesNothingWithAnother() throws {
        let first = try PersistentStoreCoordinator(model: TestModel.model, url: URL(string: "memory:")!)
        let second = try PersistentStoreCoordinator(inMemory: TestModel.model)
        #expect(first.isInMemory && second.isInMemory)
        #expect(first.path == "memory:" + first.storeID.uuidString.lowercased())
        #expect(first.storeID != second.storeID)
        let context = ObjectContext(coordinator: first)
        try context.performAndWait {
            for id in ["p1", "p2", "p3"] { insertPhoto(context, id: id) }
            try context.save()
        }
        #expect(try first.count("Photo") == 3)
        #expect(try second.count("Photo") == 0)
        let (file, directory) = try TestModel.store(on: .sqlite)
        defer { withExtendedLifetime(directory) {} }
        #expect(!file.isInMemory)
    }

    @Test func aStoreInMemoryIsGoneWithItsCoordinator() throws {
        weak var released: PersistentStoreCoordinator?
        var id: ObjectID?
        do {
            let coordinator = try PersistentStoreCoordinator(inMemory: TestModel.model)
            released = coordinator
            let context = ObjectContext(coordinator: coordinator)
            id = try context.performAndWait {
                let photo = insertPhoto(context, id: "p1", title: "Harbour")
                try context.save()
                return photo.objectID
            }
        }
        #expect(released == nil)
        #expect(id?.isTemporary == false)
    }

    /// Saves from many contexts at once: the one connection serializes them, and every row lands.
    @Test func manyContextsSaveIntoOneStoreInMemoryAtOnce() async throws {
        let coordinator = try PersistentStoreCoordinator(inMemory: TestModel.model)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    let context = ObjectContext(coordinator: coordinator, name: "worker \(worker)")
                    try context.performAndWait {
                        for batch in 0..<5 {
                            for i in 0..<20 { insertPhoto(context, id: "w\(worker)-b\(batch)-\(i)") }
                            try context.save()
                            context.reset()
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let reader = ObjectContext(coordinator: coordinator)
        let ids = try reader.performAndWait { try reader.fetch("Photo").compactMap { $0.id?.stringValue } }
        #expect(ids.count == 800)
        var expected = Set<String>()
        for w in 0..<8 { for b in 0..<5 { for n in 0..<20 { expected.insert("w\(w)-b\(b)-\(n)") } } }
        #expect(Set(ids) == expected)
    }

    @Test func aStoreURLOfAnotherSchemeNamesTheThreeItKnows() throws {
        let error = #expect(throws: StoreError.self) {
            try PersistentStoreCoordinator(model: TestModel.model, url: URL(string: "mysql://localhost/db")!)
        }
        #expect(error?.description == "mysql://localhost/db is not an Ingest store: a store URL is file: (SQLite), postgresql: (PostgreSQL) or memory:, not mysql:")
    }
}
