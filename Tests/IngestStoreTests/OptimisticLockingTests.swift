import Foundation
import IngestTestSupport
import Synchronization
import Testing
@testable import IngestStore

/// Optimistic locking: a context saves an object whose row another context (with its own
/// coordinator, as another process would have) changed after it was read. Each merge
/// policy resolves it property by property, as Core Data's do.
@Suite struct OptimisticLockingTests {
    /// `count` coordinators on one new store: separate connections, as separate processes have
    /// (in memory, the one coordinator `count` times).
    static func coordinators(_ count: Int, on backend: StoreBackend) throws -> ([PersistentStoreCoordinator], TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        switch backend {
        case .sqlite:
            let path = directory.file("store.sqlite")
            return (try (0..<count).map { _ in try PersistentStoreCoordinator(model: TestModel.model, path: path) }, directory)
        case .postgres:
            let url = URL(string: try StoreBackend.newDatabase())!
            return (try (0..<count).map { _ in try PersistentStoreCoordinator(model: TestModel.model, url: url) }, directory)
        case .memory:
            // Only its own coordinator reaches a store in memory: the writers are contexts
            // on that one coordinator, as two contexts of one app are in Core Data.
            let store = try PersistentStoreCoordinator(inMemory: TestModel.model)
            return (Array(repeating: store, count: count), directory)
        }
    }

    /// Photo p1 ("Harbour") saved through one coordinator; a context on each, the editor's
    /// with `policy`.
    static func photoInTwoStores(_ policy: MergePolicy, on backend: StoreBackend) throws
        -> ([PersistentStoreCoordinator], TemporaryDirectory, other: ObjectContext, editor: ObjectContext, ObjectID) {
        let (coordinators, directory) = try coordinators(2, on: backend)
        let other = ObjectContext(coordinator: coordinators[0], name: "other")
        let id = try other.performAndWait {
            let photo = insertPhoto(other, id: "p1", title: "Harbour")
            try other.save()
            return photo.objectID
        }
        let editor = ObjectContext(coordinator: coordinators[1], name: "editor")
        editor.mergePolicy = policy
        return (coordinators, directory, other, editor, id)
    }

    struct Race {
        let directory: TemporaryDirectory
        let store: PersistentStoreCoordinator
        let editor: ObjectContext
        let photo: ManagedObject
        let ids: [String: ObjectID]
    }

    /// Photo p1 ("Harbour", 1 view, by ana) is saved. The editor (its own coordinator) reads
    /// it and sets the title to "Pier" and the photographer to bo; then another writer sets
    /// the title to "Dock" and the views to 7 and saves. The editor has not saved yet.
    static func race(_ policy: MergePolicy, on backend: StoreBackend) throws -> Race {
        let (coordinators, directory) = try coordinators(2, on: backend)
        let other = ObjectContext(coordinator: coordinators[0], name: "other")
        let ids = try other.performAndWait {
            let ana = other.insert("Photographer"); ana.id = "ana"
            let bo = other.insert("Photographer"); bo.id = "bo"
            let photo = insertPhoto(other, id: "p1", title: "Harbour")
            photo.views = 1
            photo.setObject(ana, forKey: "whoTook")
            try other.save()
            return ["ana": ana.objectID, "bo": bo.objectID, "p1": photo.objectID]
        }
        let editor = ObjectContext(coordinator: coordinators[1], name: "editor")
        editor.mergePolicy = policy
        let photo = try editor.performAndWait {
            let photo = try #require(try editor.fetch("Photo").first)
            photo.title = "Pier"
            photo.setObject(editor.object(with: ids["bo"]!), forKey: "whoTook")
            return photo
        }
        try other.performAndWait {
            let photo = other.object(with: ids["p1"]!)
            photo.title = "Dock"
            photo.views = 7
            try other.save()
        }
        return Race(directory: directory, store: coordinators[0], editor: editor, photo: photo, ids: ids)
    }

    /// p1 as stored: "title views photographer".
    static func stored(_ coordinator: PersistentStoreCoordinator) throws -> String {
        let reader = ObjectContext(coordinator: coordinator)
        return try reader.performAndWait {
            let photo = try #require(try reader.fetch("Photo").first)
            return "\(photo.title?.stringValue ?? "-") \(photo.views!) \(photo.object(forKey: "whoTook")?.id?.stringValue ?? "-")"
        }
    }

    @Test(arguments: StoreBackend.available) func errorPolicyNamesTheObjectAndEveryPropertyTheStoreChangedAndWritesNothing(backend: StoreBackend) throws {
        let race = try Self.race(.error, on: backend)
        let error = try race.editor.performAndWait { try #require(throws: StoreError.self) { try race.editor.save() } }
        #expect(error.description == "the save conflicts with changes made in the store since the objects were read: "
            + "Photo \"p1\": the store changed title (read \"Harbour\", stored \"Dock\", here \"Pier\"), views (read 1, stored 7)")
        guard case .mergeConflict(let conflicts) = error else { Issue.record("not a merge conflict: \(error)"); return }
        #expect(conflicts.map(\.objectID) == [race.ids["p1"]!])
        #expect(conflicts[0].kind == .changedInBoth)
        #expect(conflicts[0].properties.map(\.name) == ["title", "views"])
        #expect(conflicts[0].properties.map(\.changedHere) == [true, false])
        #expect(try Self.stored(race.store) == "Dock 7 ana")
        // Nothing changed in the context: the same save meets the same conflict.
        race.editor.performAndWait {
            #expect(race.photo.title == "Pier" && race.editor.hasChanges)
            #expect(throws: StoreError.self) { try race.editor.save() }
        }
    }

    @Test(arguments: StoreBackend.available) func mergeByPropertyStoreTrumpKeepsTheStoresChangesAndWritesTheContextsOthers(backend: StoreBackend) throws {
        let race = try Self.race(.mergeByPropertyStoreTrump, on: backend)
        try race.editor.performAndWait { try race.editor.save() }
        #expect(try Self.stored(race.store) == "Dock 7 bo")
        race.editor.performAndWait {
            #expect(race.photo.title == "Dock" && race.photo.views == 7)
            #expect(race.photo.object(forKey: "whoTook")?.objectID == race.ids["bo"])
            #expect(!race.editor.hasChanges)
        }
    }

    @Test(arguments: StoreBackend.available) func mergeByPropertyObjectTrumpWritesTheContextsChangesAndKeepsTheStoresOthers(backend: StoreBackend) throws {
        let race = try Self.race(.mergeByPropertyObjectTrump, on: backend)
        try race.editor.performAndWait { try race.editor.save() }
        #expect(try Self.stored(race.store) == "Pier 7 bo")
        race.editor.performAndWait { #expect(race.photo.title == "Pier" && race.photo.views == 7) }
    }

    @Test(arguments: StoreBackend.available) func overwriteWritesTheObjectWholeOverTheStoresChanges(backend: StoreBackend) throws {
        let race = try Self.race(.overwrite, on: backend)
        try race.editor.performAndWait { try race.editor.save() }
        #expect(try Self.stored(race.store) == "Pier 1 bo")
        race.editor.performAndWait { #expect(race.photo.title == "Pier" && race.photo.views == 1) }
    }

    @Test(arguments: StoreBackend.available) func rollbackDropsTheContextsChangesToTheObject(backend: StoreBackend) throws {
        let race = try Self.race(.rollback, on: backend)
        try race.editor.performAndWait { try race.editor.save() }
        #expect(try Self.stored(race.store) == "Dock 7 ana")
        race.editor.performAndWait {
            #expect(race.photo.title == "Dock" && race.photo.views == 7)
            #expect(race.photo.object(forKey: "whoTook")?.objectID == race.ids["ana"])
            #expect(!race.editor.hasChanges)
        }
    }

    @Test(arguments: StoreBackend.available) func aSaveAfterMergingTheOtherSaveMeetsNoConflict(backend: StoreBackend) throws {
        let (coordinators, directory) = try Self.coordinators(1, on: backend)
        defer { withExtendedLifetime(directory) {} }
        let coordinator = coordinators[0]
        let first = ObjectContext(coordinator: coordinator, name: "first")
        let second = ObjectContext(coordinator: coordinator, name: "second")
        let id = try first.performAndWait {
            let photo = insertPhoto(first, id: "p1", title: "Harbour")
            try first.save()
            return photo.objectID
        }
        second.performAndWait { second.object(with: id).title = "Pier" }
        let notice = Mutex<SaveNotice?>(nil)
        let token = coordinator.addSaveObserver { saved in notice.withLock { $0 = saved } }
        defer { coordinator.removeSaveObserver(token) }
        try first.performAndWait {
            first.object(with: id).views = 3
            try first.save()
        }
        try second.performAndWait {
            second.mergeChanges(fromDidSave: try #require(notice.withLock { $0 }))
            try second.save()
        }
        #expect(try Self.stored(coordinator) == "Pier 3 -")
    }

    @Test(arguments: StoreBackend.available) func anObjectWhoseRowWasDeletedConflictsUnlessThePolicyGivesItUp(backend: StoreBackend) throws {
        for policy in MergePolicy.allCases {
            let (coordinators, directory, other, editor, id) = try Self.photoInTwoStores(policy, on: backend)
            defer { withExtendedLifetime(directory) {} }
            let photo = editor.performAndWait {
                let photo = editor.object(with: id)
                photo.title = "Pier"
                return photo
            }
            try other.performAndWait {
                other.delete(other.object(with: id))
                try other.save()
            }
            let result = editor.performAndWait { Result { try editor.save() } }
            switch policy {
            case .storeTrump, .rollback:
                #expect(throws: Never.self, "\(policy)") { try result.get() }
                editor.performAndWait { #expect(photo.isDeleted && !editor.hasChanges, "\(policy)") }
            case .error, .objectTrump, .overwrite:
                #expect(throws: StoreError.mergeConflict([MergeConflict(objectID: id, label: "Photo \"p1\"", kind: .deletedInStore, properties: [])]),
                        "\(policy)") { try result.get() }
                #expect(result.failure.map { "\($0)" } == "the save conflicts with changes made in the store since the objects were read: Photo \"p1\" was deleted from the store")
            }
            #expect(try coordinators[0].count("Photo") == 0)
        }
    }

    @Test(arguments: StoreBackend.available) func deletingAnObjectTheStoreChangedConflictsUnderTheErrorPolicyOnly(backend: StoreBackend) throws {
        for policy in [MergePolicy.error, .storeTrump] {
            let (coordinators, directory, other, editor, id) = try Self.photoInTwoStores(policy, on: backend)
            defer { withExtendedLifetime(directory) {} }
            editor.performAndWait {
                let photo = editor.object(with: id)
                _ = photo.title
                editor.delete(photo)
            }
            try other.performAndWait {
                other.object(with: id).title = "Dock"
                try other.save()
            }
            let result = editor.performAndWait { Result { try editor.save() } }
            if policy == .error {
                #expect(result.failure.map { "\($0)" } == "the save conflicts with changes made in the store since the objects were read: "
                    + "Photo \"p1\" is deleted here, but the store changed title (read \"Harbour\", stored \"Dock\")")
                #expect(try coordinators[0].count("Photo") == 1)
            } else {
                #expect(throws: Never.self) { try result.get() }
                #expect(try coordinators[0].count("Photo") == 0)
            }
        }
    }

    /// A delete whose nullify rule unlinks an object this save also changes is no conflict:
    /// nobody else wrote, and the store still holds the link until the delete runs.
    @Test(arguments: StoreBackend.available) func aNullifyRuleUnlinkingAChangedObjectIsNoConflict(backend: StoreBackend) throws {
        for policy in MergePolicy.allCases {
            let (coordinators, directory) = try Self.coordinators(1, on: backend)
            defer { withExtendedLifetime(directory) {} }
            let context = ObjectContext(coordinator: coordinators[0], name: "editor")
            context.mergePolicy = policy
            let (photoID, anaID) = try context.performAndWait {
                let ana = context.insert("Photographer"); ana.id = "ana"
                let photo = insertPhoto(context, id: "p1", title: "Harbour")
                photo.setObject(ana, forKey: "whoTook")
                try context.save()
                context.reset()
                return (photo.objectID, ana.objectID)
            }
            try context.performAndWait {
                let photo = context.object(with: photoID)
                photo.title = "Pier"
                context.delete(context.object(with: anaID))
                try context.save()
                #expect(photo.title == "Pier" && photo.object(forKey: "whoTook") == nil, "\(policy)")
            }
            #expect(try Self.stored(coordinators[0]) == "Pier 0 -", "\(policy)")
        }
    }

    /// Many contexts, each on its own coordinator, add to one counter at once; each save
    /// that meets a conflict refreshes and tries again. Without the check inside the save's
    /// transaction, increments would be lost.
    @Test(arguments: StoreBackend.available) func concurrentIncrementsThroughConflictsAndRetriesLoseNone(backend: StoreBackend) async throws {
        let workers = 4, rounds = 25
        let (coordinators, directory) = try Self.coordinators(workers, on: backend)
        defer { withExtendedLifetime(directory) {} }
        let setup = ObjectContext(coordinator: coordinators[0])
        let id = try setup.performAndWait {
            let photo = insertPhoto(setup, id: "counter")
            try setup.save()
            return photo.objectID
        }
        let retries = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    let context = ObjectContext(coordinator: coordinators[worker], name: "w\(worker)")
                    return try await context.perform { context in
                        var retries = 0
                        let photo = context.object(with: id)
                        for _ in 0..<rounds {
                            while true {
                                photo.views = .int(photo.views!.intValue! + 1)
                                do {
                                    try context.save()
                                    break
                                } catch StoreError.mergeConflict {
                                    retries += 1
                                    context.refresh(photo, mergeChanges: false)
                                }
                            }
                        }
                        return retries
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        let views = setup.performAndWait {
            setup.refresh(setup.object(with: id), mergeChanges: false)
            return setup.object(with: id).views
        }
        #expect(views == .int(Int64(workers * rounds)))
        // Not required for the check above, but a run with no conflicts would not have tested it.
        print("\(backend): \(retries) conflicts retried")
    }
}

extension Result {
    var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}
