import Foundation
import Synchronization
import Testing
@testable import IngestStore

/// The undo history lasts across saves and merges, as Core Data's does: after a save an
/// undo is a new change that the next save writes; a merge drops only the entries of the
/// objects it changed or deleted.
@Suite struct UndoAcrossSavesTests {
    /// p1 as stored, read by a context of its own: "title photographer [tags]".
    static func stored(_ coordinator: PersistentStoreCoordinator, _ id: ObjectID) -> String {
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        return reader.performAndWait {
            let photo = reader.object(with: id)
            let by = photo.object(forKey: "whoTook")?.id?.stringValue ?? "nobody"
            let tags = photo.objects(forKey: "tags").compactMap { $0.name?.stringValue }.sorted()
            return "\(photo.title?.stringValue ?? "nil") \(by) \(tags)"
        }
    }

    @Test(arguments: StoreBackend.available) func anUndoAfterASaveIsAChangeTheNextSaveWrites(backend: StoreBackend) throws {
        let (context, coordinator, directory, ids) = try UndoTests.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let photo = context.performAndWait { context.object(with: ids["p1"]!) }
        try context.performAndWait {
            photo.title = "Saved"
            try context.save()
        }
        context.performAndWait {
            #expect(context.undoManager!.canUndo && !context.hasChanges)
            context.undo()
            #expect(photo.title == "Harbour" && photo.hasChanges && context.updatedObjects == [photo])
        }
        #expect(Self.stored(coordinator, ids["p1"]!) == "Saved ana []")
        try context.performAndWait { try context.save() }
        #expect(Self.stored(coordinator, ids["p1"]!) == "Harbour ana []")
        // Redone and undone again: back at the saved value, nothing to save.
        context.performAndWait {
            context.redo()
            #expect(photo.title == "Saved" && context.hasChanges)
            context.undo()
            #expect(photo.title == "Harbour" && !context.hasChanges)
        }
    }

    @Test(arguments: StoreBackend.available) func relationshipChangesAreUndoneAfterTheSaveOnBothSides(backend: StoreBackend) throws {
        let (context, coordinator, directory, ids) = try UndoTests.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        try context.performAndWait {
            let photo = context.object(with: ids["p1"]!)
            photo.setObject(context.object(with: ids["bo"]!), forKey: "whoTook")
            photo.addObject(context.object(with: ids["sea"]!), toKey: "tags")
            try context.save()
        }
        #expect(Self.stored(coordinator, ids["p1"]!) == "Harbour bo [\"sea\"]")
        try context.performAndWait {
            context.undo()
            let photo = context.object(with: ids["p1"]!)
            #expect(photo.object(forKey: "whoTook")?.objectID == ids["ana"]!)
            #expect(photo.objects(forKey: "tags").isEmpty)
            #expect(context.object(with: ids["ana"]!).objects(forKey: "photos").map(\.objectID).contains(ids["p1"]!))
            #expect(context.object(with: ids["bo"]!).objects(forKey: "photos").isEmpty)
            #expect(context.object(with: ids["sea"]!).objects(forKey: "photos").isEmpty)
            try context.save()
        }
        #expect(Self.stored(coordinator, ids["p1"]!) == "Harbour ana []")
        try context.performAndWait {
            context.redo()
            try context.save()
        }
        #expect(Self.stored(coordinator, ids["p1"]!) == "Harbour bo [\"sea\"]")
    }

    @Test(arguments: StoreBackend.available) func undoingASavedInsertDeletesTheObjectAtTheNextSave(backend: StoreBackend) throws {
        let (context, coordinator, directory, _) = try UndoTests.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let photo = try context.performAndWait {
            let photo = insertPhoto(context, id: "p9", title: "New")
            try context.save()
            return photo
        }
        #expect(try coordinator.count("Photo") == 3)
        try context.performAndWait {
            context.undo()
            #expect(photo.isDeleted && context.deletedObjects == [photo])
            context.redo()
            #expect(!photo.isDeleted && !context.hasChanges && photo.title == "New")
            context.undo()
            try context.save()
        }
        #expect(try coordinator.count("Photo") == 2)
        // The row is gone: the save dropped its entries, so there is nothing to redo.
        context.performAndWait { #expect(!context.undoManager!.canRedo) }
    }

    @Test(arguments: StoreBackend.available) func aSaveDropsTheEntriesOfTheObjectsItDeletedOnly(backend: StoreBackend) throws {
        let (context, coordinator, directory, ids) = try UndoTests.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        context.performAndWait { context.object(with: ids["p1"]!).title = "One" }
        try context.performAndWait {
            let p2 = context.object(with: ids["p2"]!)
            p2.title = "Gone"
            context.delete(p2)
            try context.save()
        }
        try context.performAndWait {
            context.undo()
            #expect(context.object(with: ids["p1"]!).title == "Harbour" && !context.undoManager!.canUndo)
            try context.save()
        }
        #expect(try coordinator.count("Photo") == 1)
        #expect(Self.stored(coordinator, ids["p1"]!) == "Harbour ana []")
    }

    /// The case of issue 42: a background import saving while the user edits, merged
    /// automatically, leaves the user's changes undoable.
    @Test(arguments: StoreBackend.available) func aBackgroundSaveMergedAutomaticallyLeavesTheEditorsHistory(backend: StoreBackend) throws {
        let (context, coordinator, directory, ids) = try UndoTests.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        var merges = 0
        context.performAndWait {
            context.automaticallyMergesChangesFromCoordinator = true
            context.onDidMerge = { _ in merges += 1 }
            context.object(with: ids["p1"]!).title = "Mine"
        }
        let importer = ObjectContext(coordinator: coordinator, name: "importer")
        try importer.performAndWait {
            for n in 1...3 { insertPhoto(importer, id: "new\(n)") }
            importer.object(with: ids["p2"]!).views = 40
            try importer.save()
        }
        // The merge was queued on the editor's queue during the save: this block runs after it.
        let (merged, titles, views) = context.performAndWait {
            #expect(context.undoManager!.canUndo)
            context.undo()
            return (merges, context.object(with: ids["p1"]!).title, context.object(with: ids["p2"]!).views)
        }
        #expect(merged == 1 && titles == "Harbour" && views == .int(40))
        context.performAndWait { #expect(!context.hasChanges && !context.undoManager!.canUndo) }
    }

    /// Another context saves changes to p2, then deletes the tag; the editor changed p1, p2
    /// and the tag before. Each merge drops the changed object's entries; p1's survive both.
    @Test(arguments: StoreBackend.available) func aMergeDropsTheEntriesOfTheObjectsItChangesOrDeletesOnly(backend: StoreBackend) throws {
        let (context, coordinator, directory, ids) = try UndoTests.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let notices = Mutex<[SaveNotice]>([])
        let token = coordinator.addSaveObserver { notice in notices.withLock { $0.append(notice) } }
        defer { coordinator.removeSaveObserver(token) }
        context.performAndWait { context.object(with: ids["p1"]!).title = "Mine" }
        try context.performAndWait {
            context.object(with: ids["p2"]!).title = "Editor's"
            context.object(with: ids["sea"]!).name = "ocean"
            try context.save()
        }
        context.performAndWait { context.object(with: ids["p2"]!).views = 5 }
        let other = ObjectContext(coordinator: coordinator, name: "other")
        try other.performAndWait {
            other.object(with: ids["p2"]!).title = "Theirs"
            try other.save()
            other.delete(other.object(with: ids["sea"]!))
            try other.save()
        }
        let (update, delete) = notices.withLock { ($0[1], $0[2]) }
        #expect(update.updated == [ids["p2"]!] && delete.deleted == [ids["sea"]!])
        try context.performAndWait {
            context.mergeChanges(fromDidSave: update)
            context.mergeChanges(fromDidSave: delete)
            let p2 = context.object(with: ids["p2"]!)
            #expect(p2.title == "Theirs" && p2.views == .int(5))
            // p2's views and the tag's name are gone from the history; p1's title is left.
            context.undo()
            #expect(p2.views == .int(5) && p2.title == "Theirs")
            #expect(context.object(with: ids["p1"]!).title == "Harbour" && !context.undoManager!.canUndo)
            try context.save()
        }
        #expect(Self.stored(coordinator, ids["p1"]!) == "Harbour ana []")
    }
}
