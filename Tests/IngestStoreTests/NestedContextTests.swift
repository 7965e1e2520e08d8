import Foundation
import Testing
@testable import IngestStore

/// Child contexts (Core Data's `parentContext`): a child reads through its parent, its
/// save hands its changes to the parent, the parent's save writes them.
@Suite struct NestedContextTests {
    static func setUp(_ backend: StoreBackend) throws -> (ObjectContext, PersistentStoreCoordinator, Any, [String: ObjectID]) {
        let (parent, coordinator, directory, ids) = try UndoTests.setUp(backend)
        parent.performAndWait { parent.undoManager = nil }
        return (parent, coordinator, directory, ids)
    }

    static func stored(_ coordinator: PersistentStoreCoordinator, _ id: ObjectID) -> String {
        UndoAcrossSavesTests.stored(coordinator, id)
    }

    @Test(arguments: StoreBackend.available) func aChildsSaveReachesTheParentAndOnlyTheParentsSaveTheStore(backend: StoreBackend) throws {
        let (parent, coordinator, directory, ids) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let child = ObjectContext(parent: parent, name: "sheet")
        #expect(child.parentContext === parent && child.coordinator === coordinator)
        let newID = try child.performAndWait {
            let photo = child.object(with: ids["p1"]!)
            photo.title = "Pier"
            let p9 = insertPhoto(child, id: "p9", title: "New")
            p9.setObject(child.object(with: ids["bo"]!), forKey: "whoTook")
            try child.save()
            #expect(!child.hasChanges)
            return p9.objectID
        }
        #expect(newID.isTemporary)
        #expect(Self.stored(coordinator, ids["p1"]!) == "Harbour ana []")
        try parent.performAndWait {
            #expect(parent.hasChanges)
            #expect(parent.object(with: ids["p1"]!).title == "Pier")
            let p9 = parent.object(with: newID)
            #expect(p9.isInserted && p9.title == "New" && p9.object(forKey: "whoTook")?.objectID == ids["bo"]!)
            #expect(parent.object(with: ids["bo"]!).objectIDs(forKey: "photos") == [newID])
            #expect(try parent.count("Photo") == 3)
            try parent.save()
        }
        #expect(Self.stored(coordinator, ids["p1"]!) == "Pier ana []")
        let saved = try parent.performAndWait { try #require(parent.fetch("Photo", where: "id", equals: "p9").first).objectID }
        #expect(Self.stored(coordinator, saved) == "New bo []")
    }

    @Test(arguments: StoreBackend.available) func aChildReadsItsParentsUnsavedChanges(backend: StoreBackend) throws {
        let (parent, _, directory, ids) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let inserted = parent.performAndWait {
            parent.object(with: ids["p1"]!).title = "Quay"
            parent.delete(parent.object(with: ids["p2"]!))
            return insertPhoto(parent, id: "p8", title: "Dock").objectID
        }
        let child = ObjectContext(parent: parent)
        try child.performAndWait {
            var request = FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("id")])
            #expect(try child.fetch(request).map { "\($0.id!.stringValue!) \($0.title!.stringValue!)" } == ["p1 Quay", "p8 Dock"])
            request.predicate = try QueryPredicate(format: "title == %@", "Dock")
            #expect(try child.fetch(request).map(\.objectID) == [inserted])
            #expect(try child.count(for: request) == 1 && child.count("Photo") == 2)
            #expect(try child.fetch("Photo", where: "title", equals: "Quay").map(\.objectID) == [ids["p1"]!])
            #expect(child.object(with: inserted).title == "Dock")
            #expect(Set(child.object(with: ids["ana"]!).objectIDs(forKey: "photos")) == [ids["p1"]!])
            #expect(throws: StoreError.objectNotFound(ids["p2"]!)) { try child.existingObject(with: ids["p2"]!) }
            // The child's own changes come on top.
            child.object(with: ids["p1"]!).title = "Dock"
            #expect(try child.fetch(request).map(\.objectID) == [ids["p1"]!, inserted])
            #expect(parent.performAndWait { parent.object(with: ids["p1"]!).title } == "Quay")
        }
    }

    @Test(arguments: StoreBackend.available) func aChildNeverSavedIsDiscardedWhole(backend: StoreBackend) throws {
        let (parent, coordinator, directory, ids) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        do {
            let child = ObjectContext(parent: parent)
            child.performAndWait {
                child.object(with: ids["p1"]!).title = "Scratch"
                child.delete(child.object(with: ids["p2"]!))
                _ = insertPhoto(child, id: "p9")
                #expect(child.hasChanges)
            }
        }
        parent.performAndWait {
            #expect(!parent.hasChanges)
            #expect(parent.object(with: ids["p1"]!).title == "Harbour")
        }
        try parent.performAndWait { try parent.save() }
        #expect(Self.stored(coordinator, ids["p1"]!) == "Harbour ana []")
        #expect(Self.stored(coordinator, ids["p2"]!) == "Bridge ana []")
    }

    @Test(arguments: StoreBackend.available) func relationshipsAndDeletesReachTheParentOnBothSides(backend: StoreBackend) throws {
        let (parent, coordinator, directory, ids) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let child = ObjectContext(parent: parent)
        try child.performAndWait {
            let photo = child.object(with: ids["p1"]!)
            photo.setObject(child.object(with: ids["bo"]!), forKey: "whoTook")
            photo.addObject(child.object(with: ids["sea"]!), toKey: "tags")
            child.delete(child.object(with: ids["p2"]!))
            try child.save()
        }
        try parent.performAndWait {
            let photo = parent.object(with: ids["p1"]!)
            #expect(photo.object(forKey: "whoTook")?.objectID == ids["bo"]!)
            #expect(parent.object(with: ids["bo"]!).objectIDs(forKey: "photos") == [ids["p1"]!])
            #expect(!parent.object(with: ids["ana"]!).objectIDs(forKey: "photos").contains(ids["p1"]!))
            #expect(parent.object(with: ids["sea"]!).objectIDs(forKey: "photos") == [ids["p1"]!])
            #expect(parent.deletedObjects.map(\.objectID) == [ids["p2"]!])
            try parent.save()
        }
        #expect(Self.stored(coordinator, ids["p1"]!) == "Harbour bo [\"sea\"]")
        let reader = ObjectContext(coordinator: coordinator)
        #expect(throws: StoreError.objectNotFound(ids["p2"]!)) { try reader.performAndWait { try reader.existingObject(with: ids["p2"]!) } }
    }

    @Test(arguments: StoreBackend.available) func aGrandchildsChangesReachTheStoreThroughEachSave(backend: StoreBackend) throws {
        let (parent, coordinator, directory, ids) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let child = ObjectContext(parent: parent, name: "child")
        let grandchild = ObjectContext(parent: child, name: "grandchild")
        let newID = try grandchild.performAndWait {
            grandchild.object(with: ids["p1"]!).title = "Deep"
            let photo = insertPhoto(grandchild, id: "p7", title: "Seven")
            try grandchild.save()
            return photo.objectID
        }
        #expect(child.performAndWait { child.object(with: ids["p1"]!).title } == "Deep")
        #expect(parent.performAndWait { !parent.hasChanges })
        try child.performAndWait { try child.save() }
        try parent.performAndWait { try parent.save() }
        #expect(Self.stored(coordinator, ids["p1"]!) == "Deep ana []")
        // The new object keeps its temporary ID below (as in Core Data), and still reads and saves.
        try grandchild.performAndWait {
            let photo = grandchild.object(with: newID)
            #expect(photo.objectID.isTemporary && photo.title == "Seven")
            photo.title = "Seventh"
            try grandchild.save()
        }
        try child.performAndWait { try child.save() }
        try parent.performAndWait { try parent.save() }
        let saved = try parent.performAndWait { try #require(parent.fetch("Photo", where: "id", equals: "p7").first).objectID }
        #expect(Self.stored(coordinator, saved) == "Seventh nobody []")
    }

    @Test(arguments: StoreBackend.available) func obtainPermanentIDsWorksThroughTheChain(backend: StoreBackend) throws {
        let (parent, coordinator, directory, _) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let child = ObjectContext(parent: parent)
        let (early, late) = try child.performAndWait {
            let early = insertPhoto(child, id: "p5", title: "Early")
            try child.obtainPermanentIDs(for: [early])
            #expect(!early.objectID.isTemporary)
            let late = insertPhoto(child, id: "p6", title: "Late")
            try child.save()
            // Already handed to the parent: its ID is obtained there too.
            try child.obtainPermanentIDs(for: [late])
            #expect(!late.objectID.isTemporary)
            return (early.objectID, late.objectID)
        }
        try parent.performAndWait {
            #expect(parent.object(with: early).isInserted && parent.object(with: late).isInserted)
            try parent.save()
        }
        #expect(Self.stored(coordinator, early) == "Early nobody []")
        #expect(Self.stored(coordinator, late) == "Late nobody []")
    }

    @Test(arguments: StoreBackend.available) func aNewObjectGivenItsKeyByTheParentStillReadsAndSavesInTheChild(backend: StoreBackend) throws {
        let (parent, coordinator, directory, ids) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let child = ObjectContext(parent: parent)
        let newID = try child.performAndWait {
            let photo = insertPhoto(child, id: "p9", title: "New")
            photo.setObject(child.object(with: ids["ana"]!), forKey: "whoTook")
            try child.save()
            return photo.objectID
        }
        // The parent gives it its key on its own, then saves.
        try parent.performAndWait {
            try parent.obtainPermanentIDs(for: Array(parent.insertedObjects))
            try parent.save()
        }
        try child.performAndWait {
            let photo = child.object(with: newID)
            #expect(photo.title == "New")
            photo.title = "Renamed"
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        let saved = try parent.performAndWait { try #require(parent.fetch("Photo", where: "id", equals: "p9").first).objectID }
        #expect(Self.stored(coordinator, saved) == "Renamed ana []")
    }

    @Test(arguments: StoreBackend.available) func aLinkToANewObjectTheParentSavedSinceIsNoConflict(backend: StoreBackend) throws {
        let (parent, coordinator, directory, ids) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let newPhotographer = parent.performAndWait {
            let cy = parent.insert("Photographer")
            cy.id = "cy"
            parent.object(with: ids["p1"]!).setObject(cy, forKey: "whoTook")
            return cy.objectID
        }
        let child = ObjectContext(parent: parent)
        let photo = child.performAndWait {
            let photo = child.object(with: ids["p1"]!)
            #expect(photo.object(forKey: "whoTook")?.objectID == newPhotographer)
            return photo
        }
        try parent.performAndWait { try parent.save() }
        // The child read p1 linked to cy's temporary ID; the parent holds it under its key now: the same link.
        try child.performAndWait {
            photo.title = "Quay"
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        #expect(Self.stored(coordinator, ids["p1"]!) == "Quay cy []")
    }

    @Test(arguments: StoreBackend.available) func anObjectInsertedAndDeletedInTheChildLeavesNoTraceInTheParent(backend: StoreBackend) throws {
        let (parent, coordinator, directory, ids) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let child = ObjectContext(parent: parent)
        try child.performAndWait {
            let photo = insertPhoto(child, id: "p9")
            photo.setObject(child.object(with: ids["bo"]!), forKey: "whoTook")
            photo.addObject(child.object(with: ids["sea"]!), toKey: "tags")
            child.delete(photo)
            try child.save()
        }
        try parent.performAndWait {
            #expect(parent.object(with: ids["bo"]!).objects(forKey: "photos").isEmpty)
            #expect(parent.object(with: ids["sea"]!).objects(forKey: "photos").isEmpty)
            #expect(parent.insertedObjects.isEmpty)
            try parent.save()
        }
        #expect(Self.stored(coordinator, ids["p1"]!) == "Harbour ana []")
    }

    @Test(arguments: StoreBackend.available) func aChildsObjectIDFetchIsItsParents(backend: StoreBackend) throws {
        let (parent, _, directory, ids) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let inserted = parent.performAndWait {
            parent.delete(parent.object(with: ids["p2"]!))
            return insertPhoto(parent, id: "p8").objectID
        }
        let child = ObjectContext(parent: parent)
        let request = FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("id")])
        #expect(try child.performAndWait { try child.fetchObjectIDs(request) } == [ids["p1"]!, inserted])
    }

    static let policies: [MergePolicy] = [.error, .objectTrump, .storeTrump, .overwrite, .rollback]

    /// The parent changed p1's title after the child read it; the child changed title and views.
    @Test(arguments: StoreBackend.available, policies) func theChildsMergePolicyResolvesConflictsWithItsParent(backend: StoreBackend, policy: MergePolicy) throws {
        let (parent, _, directory, ids) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let child = ObjectContext(parent: parent)
        let photo = child.performAndWait {
            child.mergePolicy = policy
            let photo = child.object(with: ids["p1"]!)
            _ = photo.title
            return photo
        }
        parent.performAndWait { parent.object(with: ids["p1"]!).title = "Parent" }
        let outcome: String = child.performAndWait {
            photo.title = "Child"
            photo.views = 5
            do {
                try child.save()
                return "saved"
            } catch {
                return "\(error)"
            }
        }
        let (title, views) = parent.performAndWait {
            let inParent = parent.object(with: ids["p1"]!)
            return (inParent.title?.stringValue, inParent.views?.intValue)
        }
        switch policy {
        case .error:
            #expect(outcome == "the save conflicts with changes made in the parent context since the objects were read: Photo 1: the parent context changed title (read \"Harbour\", in the parent \"Parent\", here \"Child\")")
            #expect(title == "Parent" && views == 0)
            #expect(child.performAndWait { child.hasChanges })
        case .objectTrump, .overwrite:
            #expect(outcome == "saved" && title == "Child" && views == 5)
        case .storeTrump:
            #expect(outcome == "saved" && title == "Parent" && views == 5)
            #expect(child.performAndWait { photo.title } == "Parent")
        case .rollback:
            #expect(outcome == "saved" && title == "Parent" && views == 0)
            #expect(child.performAndWait { photo.title == "Parent" && photo.views == .int(0) })
        }
    }

    @Test(arguments: StoreBackend.available) func aChildsChangeToAnObjectItsParentDeletedIsAConflict(backend: StoreBackend) throws {
        let (parent, _, directory, ids) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let child = ObjectContext(parent: parent)
        child.performAndWait { child.object(with: ids["p2"]!).title = "Kept?" }
        parent.performAndWait { parent.delete(parent.object(with: ids["p2"]!)) }
        #expect(throws: StoreError.mergeConflict([MergeConflict(objectID: ids["p2"]!, label: "Photo 2", kind: .deletedInParent, properties: [])])) {
            try child.performAndWait { try child.save() }
        }
        child.performAndWait { child.mergePolicy = .rollback }
        try child.performAndWait { try child.save() }
        parent.performAndWait { #expect(parent.deletedObjects.map(\.objectID) == [ids["p2"]!] && parent.updatedObjects.isEmpty) }
    }

    @MainActor @Test(arguments: StoreBackend.available) func aPrivateChildOfTheMainContextSavesFromTheMainActor(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let view = ObjectContext(.main, coordinator: coordinator, name: "view")
        let editor = ObjectContext(.privateQueue, parent: view, name: "editor")
        // The main queue waits for the editor's block, which uses the view context: no deadlock.
        try editor.performAndWait {
            insertPhoto(editor, id: "p1", title: "From the editor")
            try editor.save()
        }
        #expect(try view.fetch("Photo").map { $0.title?.stringValue } == ["From the editor"])
        try view.save()
        let reader = ObjectContext(coordinator: coordinator)
        #expect(try reader.performAndWait { try reader.count("Photo") } == 1)
    }
}
