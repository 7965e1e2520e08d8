import IngestTestSupport
import Foundation
import Testing
@testable import IngestStore

/// Two contexts insert the same unique key and save, one after the other.
@Suite struct MergePolicyTests {
    /// Saves photo "p1" from context A (title "first", 10 views, by "ana"), then from
    /// context B (title "second", no views set, by "bo") under `policy`.
    func race(_ policy: MergePolicy, on backend: StoreBackend) throws -> (PersistentStoreCoordinator, TemporaryDirectory, ObjectContext, ManagedObject, ObjectID, Result<Void, any Error>) {
        let (coordinator, directory) = try TestModel.store(on: backend)
        let first = ObjectContext(coordinator: coordinator, name: "A")
        let firstID: ObjectID = try first.performAndWait {
            let photo = insertPhoto(first, id: "p1", title: "first")
            photo.views = 10
            let ana = first.insert("Photographer"); ana.id = "ana"
            photo.setObject(ana, forKey: "whoTook")
            try first.save()
            return photo.objectID
        }
        let second = ObjectContext(coordinator: coordinator, name: "B")
        second.mergePolicy = policy
        let (photo, result): (ManagedObject, Result<Void, any Error>) = second.performAndWait {
            let photo = insertPhoto(second, id: "p1", title: "second")
            photo.views = nil
            let bo = second.insert("Photographer"); bo.id = "bo"
            photo.setObject(bo, forKey: "whoTook")
            return (photo, Result { try second.save() })
        }
        return (coordinator, directory, second, photo, firstID, result)
    }

    func stored(_ coordinator: PersistentStoreCoordinator) throws -> [String] {
        let reader = ObjectContext(coordinator: coordinator)
        return try reader.performAndWait {
            try reader.fetch("Photo").map { photo in
                let by = photo.object(forKey: "whoTook")?.id?.stringValue ?? "-"
                return "\(photo.id!.stringValue!) \(photo.title?.stringValue ?? "-") \(photo.views.map(\.description) ?? "-") \(by)"
            }
        }
    }

    @Test(arguments: StoreBackend.available) func errorPolicyThrowsNamingTheObjectAndKeyAndWritesNothing(backend: StoreBackend) throws {
        let (coordinator, directory, context, photo, _, result) = try race(.error, on: backend)
        defer { withExtendedLifetime(directory) {} }
        let error = try #require(throws: StoreError.self) { try result.get() }
        let id = context.performAndWait { photo.objectID }
        #expect(error.description == "the save conflicts with uniqueness constraints: \(id) has id = \"p1\", as the stored Photo row 1 does")
        #expect(try stored(coordinator) == ["p1 first 10 ana"])
        #expect(try coordinator.count("Photographer") == 1)
        context.performAndWait { #expect(context.hasChanges) }
    }

    @Test(arguments: StoreBackend.available) func objectTrumpWritesTheSavingContextsValuesOntoTheExistingRow(backend: StoreBackend) throws {
        let (coordinator, directory, context, photo, firstID, result) = try race(.objectTrump, on: backend)
        defer { withExtendedLifetime(directory) {} }
        try result.get()
        context.performAndWait { #expect(photo.objectID == firstID) }
        #expect(try stored(coordinator) == ["p1 second - bo"])
        #expect(try coordinator.count("Photo") == 1)
    }

    @Test(arguments: StoreBackend.available) func storeTrumpKeepsTheStoredValues(backend: StoreBackend) throws {
        let (coordinator, directory, context, photo, firstID, result) = try race(.storeTrump, on: backend)
        defer { withExtendedLifetime(directory) {} }
        try result.get()
        context.performAndWait {
            #expect(photo.objectID == firstID)
            #expect(photo.title == "first")
        }
        #expect(try stored(coordinator) == ["p1 first 10 ana"])
        #expect(try coordinator.count("Photographer") == 2)
    }

    @Test(arguments: StoreBackend.available) func rollbackDropsTheConflictingObjectsChanges(backend: StoreBackend) throws {
        let (coordinator, directory, context, photo, firstID, result) = try race(.rollback, on: backend)
        defer { withExtendedLifetime(directory) {} }
        try result.get()
        context.performAndWait {
            #expect(photo.objectID == firstID)
            #expect(photo.views == 10)
            #expect(photo.object(forKey: "whoTook")?.id == "ana")
        }
        #expect(try stored(coordinator) == ["p1 first 10 ana"])
    }

    @Test(arguments: StoreBackend.available) func duplicatesInsideOneSaveConflictToo(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let a = insertPhoto(context, id: "same", title: "a")
            insertPhoto(context, id: "same", title: "b")
            let error = #expect(throws: StoreError.self) { try context.save() }
            #expect(error?.description.contains("as \(a.objectID), inserted in the same save does") == true)
            context.mergePolicy = .objectTrump
            try context.save()
        }
        #expect(try stored(coordinator) == ["same b 0 -"])
    }

    @Test(arguments: StoreBackend.available) func concurrentInsertsOfOneKeyLeaveOneRow(backend: StoreBackend) async throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<6 {
                group.addTask {
                    let context = ObjectContext(coordinator: coordinator, name: "w\(worker)")
                    try await context.perform { context in
                        context.mergePolicy = .objectTrump
                        for round in 0..<20 {
                            let photographer = context.insert("Photographer")
                            photographer.id = "shared"
                            photographer.name = .string("w\(worker) r\(round)")
                            try context.save()
                            context.reset()
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try coordinator.count("Photographer") == 1)
    }
}
