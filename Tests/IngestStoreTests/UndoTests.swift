import Foundation
import Testing
@testable import IngestStore

/// A context's undo manager: groups of changes taken back and made again before a save,
/// relationships on both sides, inserts and deletes (after saves: `UndoAcrossSavesTests`).
@Suite struct UndoTests {
    /// A store with a photographer, two photos of hers, a tag and a folder with an album,
    /// saved; a context with an undo manager.
    static func setUp(_ backend: StoreBackend) throws -> (ObjectContext, PersistentStoreCoordinator, Any, [String: ObjectID]) {
        let (coordinator, directory) = try TestModel.store(on: backend)
        let context = ObjectContext(coordinator: coordinator, name: "editor")
        let ids = try context.performAndWait {
            let ana = context.insert("Photographer")
            ana.id = .string("ana")
            let bo = context.insert("Photographer")
            bo.id = .string("bo")
            let p1 = insertPhoto(context, id: "p1", title: "Harbour")
            let p2 = insertPhoto(context, id: "p2", title: "Bridge")
            p1.setObject(ana, forKey: "whoTook")
            p2.setObject(ana, forKey: "whoTook")
            let sea = context.insert("Tag")
            sea.name = .string("sea")
            let folder = context.insert("Folder")
            folder.name = .string("trips")
            let album = context.insert("Album")
            album.name = .string("2026")
            album.setObject(folder, forKey: "folder")
            try context.save()
            return ["ana": ana.objectID, "bo": bo.objectID, "p1": p1.objectID, "p2": p2.objectID, "sea": sea.objectID,
                    "folder": folder.objectID, "album": album.objectID]
        }
        context.performAndWait { context.undoManager = ContextUndoManager() }
        return (context, coordinator, directory, ids)
    }

    @Test(arguments: StoreBackend.available) func eachPerformIsAGroupUndoneAndRedoneInTurn(backend: StoreBackend) throws {
        let (context, _, directory, ids) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let photo = context.performAndWait { context.object(with: ids["p1"]!) }
        context.performAndWait { photo.title = "Pier"; photo.views = 3 }
        context.performAndWait { photo.title = "Quay" }
        context.performAndWait {
            #expect(context.undoManager!.canUndo)
            context.undo()
            #expect(photo.title == "Pier" && photo.views == .int(3))
            context.undo()
            #expect(photo.title == "Harbour" && photo.views == .int(0))
            // Back to the saved state: nothing left to save.
            #expect(!context.hasChanges && !context.undoManager!.canUndo)
            context.redo()
            #expect(photo.title == "Pier" && context.hasChanges)
            context.redo()
            #expect(photo.title == "Quay" && !context.undoManager!.canRedo)
        }
        // A new change after an undo drops what could be redone.
        context.performAndWait {
            context.undo()
            photo.title = "Dock"
            #expect(!context.undoManager!.canRedo)
        }
    }

    @Test(arguments: StoreBackend.available) func anExplicitGroupSpansPerformsAndUndoesAsOne(backend: StoreBackend) throws {
        let (context, coordinator, directory, ids) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        context.performAndWait { context.undoManager!.beginUndoGrouping() }
        context.performAndWait { context.object(with: ids["p1"]!).title = "One" }
        context.performAndWait { context.object(with: ids["p2"]!).title = "Two" }
        try context.performAndWait {
            context.undoManager!.endUndoGrouping()
            context.undo()
            #expect(context.object(with: ids["p1"]!).title == "Harbour" && context.object(with: ids["p2"]!).title == "Bridge")
            try context.save()
        }
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        let found = try reader.performAndWait { try reader.fetch("Photo", where: "title", equals: "One") }
        #expect(found.isEmpty)
    }

    @Test(arguments: StoreBackend.available) func relationshipChangesAreUndoneOnBothSides(backend: StoreBackend) throws {
        let (context, coordinator, directory, ids) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        try context.performAndWait {
            let p1 = context.object(with: ids["p1"]!)
            let ana = context.object(with: ids["ana"]!)
            let bo = context.object(with: ids["bo"]!)
            let sea = context.object(with: ids["sea"]!)
            context.undoManager!.beginUndoGrouping()
            p1.setObject(bo, forKey: "whoTook")
            p1.addObject(sea, toKey: "tags")
            context.undoManager!.endUndoGrouping()
            #expect(Set(bo.objectIDs(forKey: "photos")) == [ids["p1"]!] && Set(sea.objectIDs(forKey: "photos")) == [ids["p1"]!])
            context.undo()
            #expect(p1.object(forKey: "whoTook") === ana)
            #expect(Set(ana.objectIDs(forKey: "photos")) == [ids["p1"]!, ids["p2"]!] && bo.objectIDs(forKey: "photos").isEmpty)
            #expect(p1.objectIDs(forKey: "tags").isEmpty && sea.objectIDs(forKey: "photos").isEmpty)
            #expect(!context.hasChanges)
            context.redo()
            try context.save()
        }
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        reader.performAndWait {
            let p1 = reader.object(with: ids["p1"]!)
            #expect(p1.object(forKey: "whoTook")?.objectID == ids["bo"]! && p1.objectIDs(forKey: "tags") == [ids["sea"]!])
        }
    }

    @Test(arguments: StoreBackend.available) func insertsAndDeletesAreUndoneBeforeTheSave(backend: StoreBackend) throws {
        let (context, coordinator, directory, ids) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        try context.performAndWait {
            let p3 = insertPhoto(context, id: "p3")
            let folder = context.object(with: ids["folder"]!)
            context.delete(folder)
            context.delete(context.object(with: ids["p2"]!))
            #expect(context.insertedObjects.count == 1 && context.deletedObjects.count == 2)
            context.undo()
            #expect(context.insertedObjects.isEmpty && context.deletedObjects.isEmpty && !context.hasChanges)
            #expect(!folder.isDeleted && p3.isDeleted)
            try context.save()
        }
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        let counts = try reader.performAndWait { [try reader.count("Photo"), try reader.count("Folder"), try reader.count("Album")] }
        #expect(counts == [2, 1, 1])
        // Redone, the delete cascades when it is saved (delete rules run at the save).
        context.performAndWait {
            context.delete(context.object(with: ids["folder"]!))
        }
        try context.performAndWait {
            context.undo()
            context.redo()
            try context.save()
        }
        let left = try reader.performAndWait { [try reader.count("Folder"), try reader.count("Album")] }
        #expect(left == [0, 0])
    }

    /// An undo or a save inside an explicit group: its end still matches its beginning, and
    /// the group holds what was recorded after the undo.
    @Test func anUndoInsideAnExplicitGroupLeavesItsEndValid() throws {
        let (context, _, directory, ids) = try Self.setUp(.sqlite)
        defer { withExtendedLifetime(directory) {} }
        try context.performAndWait {
            let photo = context.object(with: ids["p1"]!)
            context.undoManager!.beginUndoGrouping()
            photo.title = "x"
            context.undo()
            #expect(photo.title == "Harbour")
            photo.title = "y"
            try context.save()
            context.undoManager!.endUndoGrouping()
            context.undo()
            #expect(photo.title == "Harbour" && context.hasChanges && !context.undoManager!.canUndo)
        }
    }

    /// A main context's performs run inline on the main queue: each still ends a group.
    @MainActor
    @Test func aMainContextsPerformsAreGroupsToo() throws {
        let (coordinator, directory) = try TestModel.store()
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(.main, coordinator: coordinator, name: "main")
        let photo = try context.performAndWait {
            let photo = insertPhoto(context, id: "p", title: "Harbour")
            try context.save()
            context.undoManager = ContextUndoManager()
            return photo
        }
        context.performAndWait { photo.title = "A" }
        context.performAndWait { photo.title = "B" }
        context.performAndWait {
            context.undo()
            #expect(photo.title == "A")
        }
    }

    /// Objects given permanent IDs before a save: the history naming the temporary ones ends.
    @Test func permanentIDsEndTheHistoryThatNamesTemporaryOnes() throws {
        let (context, _, directory, ids) = try Self.setUp(.sqlite)
        defer { withExtendedLifetime(directory) {} }
        try context.performAndWait {
            let photo = insertPhoto(context, id: "p9")
            photo.setObject(context.object(with: ids["ana"]!), forKey: "whoTook")
            try context.obtainPermanentIDs(for: [photo])
            #expect(!context.undoManager!.canUndo)
            context.undo()
            #expect(photo.object(forKey: "whoTook")?.objectID == ids["ana"]!)
        }
    }

    /// A view listening for object changes hears of what undo and redo change.
    @Test func undoAndRedoTellTheContextsListeners() throws {
        let (context, _, directory, ids) = try Self.setUp(.sqlite)
        defer { withExtendedLifetime(directory) {} }
        var heard: [ObjectsDidChange] = []
        let p3 = context.performAndWait {
            context.onObjectsDidChange = { heard.append($0) }
            let p3 = insertPhoto(context, id: "p3")
            context.delete(context.object(with: ids["p2"]!))
            context.object(with: ids["p1"]!).setObject(context.object(with: ids["bo"]!), forKey: "whoTook")
            return p3.objectID
        }
        context.performAndWait {
            heard.removeAll()
            context.undo()
        }
        #expect(heard.count == 1)
        #expect(heard.first?.inserted == [ids["p2"]!] && heard.first?.deleted == [p3])
        #expect(heard.first?.updated == [ids["p1"]!, ids["ana"]!, ids["bo"]!])
        context.performAndWait {
            heard.removeAll()
            context.redo()
        }
        #expect(heard.first?.inserted == [p3] && heard.first?.deleted == [ids["p2"]!])
    }
}
