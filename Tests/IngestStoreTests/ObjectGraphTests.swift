import Synchronization
import Foundation
import Testing
@testable import IngestStore

@Suite struct ObjectGraphTests {
    @Test(arguments: StoreBackend.available) func everyAttributeTypeRoundTrips(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let writer = ObjectContext(coordinator: coordinator, name: "writer")
        if backend == .postgres {
            // PostgreSQL's text has no U+0000: the save is refused, naming the attribute.
            writer.performAndWait {
                writer.insert("Everything")["a_string"] = sample(.string)
                #expect(throws: StoreError.validation(["a new Everything: a_string: PostgreSQL text cannot hold U+0000 (NUL)"])) { try writer.save() }
                writer.rollback()
            }
        }
        let ids: [ObjectID] = try writer.performAndWait {
            let full = writer.insert("Everything")
            for type in AttributeType.allCases { full["a_\(type.rawValue)"] = sample(type, on: backend) }
            let empty = writer.insert("Everything")
            empty["a_string"] = ""
            empty["a_binary"] = .binary([])
            let extremes = writer.insert("Everything")
            extremes["a_int64"] = .int(Int64.max)
            extremes["a_int16"] = .int(Int64(Int16.max))
            extremes["a_double"] = .double(-0.0)
            extremes["a_date"] = .date(Date(timeIntervalSince1970: 1_700_000_000.000_123))
            try writer.save()
            return [full.objectID, empty.objectID, extremes.objectID]
        }
        #expect(ids.allSatisfy { !$0.isTemporary })
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        try reader.performAndWait {
            let full = try reader.existingObject(with: ids[0])
            for type in AttributeType.allCases {
                #expect(full["a_\(type.rawValue)"] == sample(type, on: backend, stored: true), "\(type)")
            }
            let empty = try reader.existingObject(with: ids[1])
            #expect(empty["a_string"] == "")
            #expect(empty["a_binary"] == .binary([]))
            #expect(empty["a_int64"] == nil)
            #expect(empty["a_uuid"] == nil)
            let extremes = try reader.existingObject(with: ids[2])
            #expect(extremes.value(forKey: "a_int64", as: Int64.self) == Int64.max)
            // SQLite keeps -0.0 as 0.0 (it stores whole reals as integers).
            #expect(extremes["a_double"] == 0.0)
            #expect(extremes["a_date"] == .date(Date(timeIntervalSince1970: 1_700_000_000.000_123)))
        }
    }

    @Test(arguments: StoreBackend.available) func wrongTypesAndMissingRequiredValuesFailValidation(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        context.performAndWait {
            let photo = context.insert("Photo")
            photo.views = "many"
            let tooBig = context.insert("Everything")
            tooBig["a_int16"] = .int(40_000)
            let error = #expect(throws: StoreError.self) { try context.save() }
            let text = error?.description ?? ""
            #expect(text.hasPrefix("the save failed validation: "))
            #expect(text.contains("a new Photo: id is required"))
            #expect(text.contains("a new Photo: views: \"many\" is not a valid int64"))
            #expect(text.contains("a new Everything: a_int16: 40000 is not a valid int16"))
        }
        #expect(try coordinator.count("Photo") == 0)
    }

    @Test(arguments: StoreBackend.available) func defaultsApplyOnInsert(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        context.performAndWait {
            #expect(context.insert("Photo").views == 0)
        }
    }

    @Test(arguments: StoreBackend.available) func inversesFollowOnBothSides(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let ana = context.insert("Photographer"); ana.id = "ana"
            let bo = context.insert("Photographer"); bo.id = "bo"
            let photo = insertPhoto(context, id: "p1")
            photo.setObject(ana, forKey: "whoTook")
            #expect(ana.objects(forKey: "photos") == [photo])
            bo.addObject(photo, toKey: "photos")
            #expect(photo.object(forKey: "whoTook") === bo)
            #expect(ana.objects(forKey: "photos").isEmpty)
            #expect(bo.objects(forKey: "photos") == [photo])
            // Many-to-many, from either side.
            let red = context.insert("Tag"); red.name = "red"
            let blue = context.insert("Tag"); blue.name = "blue"
            photo.addObject(red, toKey: "tags")
            blue.addObject(photo, toKey: "photos")
            #expect(Set(photo.objects(forKey: "tags")) == [red, blue])
            #expect(red.objects(forKey: "photos") == [photo])
            // One-to-one: taking a partner's partner unpairs the old pair.
            let album = context.insert("Album")
            let other = insertPhoto(context, id: "p2")
            album.setObject(photo, forKey: "coverPhoto")
            #expect(photo.object(forKey: "cover") === album)
            other.setObject(album, forKey: "cover")
            #expect(album.object(forKey: "coverPhoto") === other)
            #expect(photo.object(forKey: "cover") == nil)
            try context.save()
        }
        // The same graph, read back by a fresh context.
        let reader = ObjectContext(coordinator: coordinator)
        try reader.performAndWait {
            let photo = try #require(try reader.fetch("Photo", where: "id", equals: "p1").first)
            #expect(photo.object(forKey: "whoTook")?.id == "bo")
            #expect(Set(photo.objects(forKey: "tags").compactMap { $0.name?.stringValue }) == ["red", "blue"])
            let bo = try #require(try reader.fetch("Photographer", where: "id", equals: "bo").first)
            #expect(bo.objects(forKey: "photos").map { $0.id } == ["p1"])
            let ana = try #require(try reader.fetch("Photographer", where: "id", equals: "ana").first)
            #expect(ana.objects(forKey: "photos").isEmpty)
            let other = try #require(try reader.fetch("Photo", where: "id", equals: "p2").first)
            #expect(other.object(forKey: "cover")?.object(forKey: "coverPhoto") === other)
            #expect(photo.object(forKey: "cover") == nil)
            // Removing from the many-to-many side writes the join table.
            let red = try #require(try reader.fetch("Tag", where: "name", equals: "red").first)
            red.removeObject(photo, fromKey: "photos")
            try reader.save()
        }
        let third = ObjectContext(coordinator: coordinator)
        try third.performAndWait {
            let photo = try #require(try third.fetch("Photo", where: "id", equals: "p1").first)
            #expect(photo.objects(forKey: "tags").map { $0.name } == ["blue"])
        }
    }

    @Test(arguments: StoreBackend.available) func nullifyCascadeAndDeny(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        let (photographer, photos, folder, album, albumPhoto): (ObjectID, [ObjectID], ObjectID, ObjectID, ObjectID) = try context.performAndWait {
            let ana = context.insert("Photographer"); ana.id = "ana"
            let photos = (1...3).map { insertPhoto(context, id: "p\($0)") }
            photos.forEach { ana.addObject($0, toKey: "photos") }
            let folder = context.insert("Folder")
            let album = context.insert("Album")
            album.setObject(folder, forKey: "folder")
            let inAlbum = insertPhoto(context, id: "in-album")
            inAlbum.setObject(album, forKey: "album")
            try context.save()
            return (ana.objectID, photos.map(\.objectID), folder.objectID, album.objectID, inAlbum.objectID)
        }
        try context.performAndWait {
            context.reset()
            // Nullify: the photographer goes, the photos stay without one.
            context.delete(context.object(with: photographer))
            try context.save()
            #expect(try coordinator.count("Photographer") == 0)
            for id in photos { #expect(try context.existingObject(with: id).object(forKey: "whoTook") == nil) }
            // Deny: an album with photos cannot go, even by cascade from its folder.
            context.delete(context.object(with: folder))
            let error = #expect(throws: StoreError.self) { try context.save() }
            #expect(error?.description == "the save failed validation: cannot delete \(album): Album.photos has 1 related object(s) and the deny rule")
            context.rollback()
            #expect(try coordinator.count("Folder") == 1)
            // Once the album is empty, deleting the folder cascades to it.
            try context.existingObject(with: albumPhoto).setObject(nil, forKey: "album")
            try context.save()
            context.delete(context.object(with: folder))
            try context.save()
            #expect(try coordinator.count("Folder") == 0)
            #expect(try coordinator.count("Album") == 0)
            #expect(try coordinator.count("Photo") == 4)
        }
    }

    @Test(arguments: StoreBackend.available) func fetchedObjectsAreFaultsUntilRead(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        let id: ObjectID = try context.performAndWait {
            let photo = insertPhoto(context, id: "p1", title: "Harbour")
            try context.save()
            return photo.objectID
        }
        let reader = ObjectContext(coordinator: coordinator)
        try reader.performAndWait {
            let fault = reader.object(with: id)
            #expect(fault.isFault)
            #expect(fault.title == "Harbour")
            #expect(!fault.isFault)
            let fetched = try reader.fetch("Photo")
            #expect(fetched == [fault])
            reader.reset()
            let again = try reader.fetch("Photo")
            #expect(again[0].isFault)
            #expect(again[0].title == "Harbour")
        }
    }

    @Test(arguments: StoreBackend.available) func fetchSeesUnsavedChanges(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            insertPhoto(context, id: "a", title: "x")
            insertPhoto(context, id: "b", title: "y")
            try context.save()
            insertPhoto(context, id: "c", title: "x")
            let b = try #require(try context.fetch("Photo", where: "id", equals: "b").first)
            b.title = "x"
            let a = try #require(try context.fetch("Photo", where: "id", equals: "a").first)
            context.delete(a)
            #expect(Set(try context.fetch("Photo", where: "title", equals: "x").compactMap { $0.id?.stringValue }) == ["b", "c"])
            #expect(try context.count("Photo") == 2)
            #expect(try context.fetch("Photo", where: "title", equals: nil).isEmpty)
        }
    }

    @Test(arguments: StoreBackend.available) func rollbackResetAndRegisteredObjects(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let kept = insertPhoto(context, id: "kept", title: "before")
            try context.save()
            kept.title = "after"
            insertPhoto(context, id: "dropped")
            #expect(context.hasChanges)
            #expect(context.insertedObjects.count == 1 && context.updatedObjects == [kept])
            context.rollback()
            #expect(!context.hasChanges)
            #expect(kept.title == "before")
            #expect(try context.count("Photo") == 1)
            for i in 0..<100 { insertPhoto(context, id: "n\(i)") }
            try context.save()
            #expect(context.registeredObjectCount == 101)
            context.reset()
            #expect(context.registeredObjectCount == 0)
            #expect(!context.hasChanges)
        }
    }

    @Test(arguments: StoreBackend.available) func objectIDsAreURIsAndBecomePermanentOnSave(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let photo = insertPhoto(context, id: "p")
            let other = insertPhoto(context, id: "q")
            #expect(photo.objectID.isTemporary)
            #expect(photo.objectID.uri.hasPrefix("ingest://\(coordinator.storeID.uuidString)/Photo/t"))
            #expect(ObjectID(uri: photo.objectID.uri) == photo.objectID)
            try context.obtainPermanentIDs(for: [photo])
            #expect(!photo.objectID.isTemporary)
            #expect(context.object(with: photo.objectID) === photo)
            try context.save()
            #expect(!other.objectID.isTemporary)
            #expect(other.objectID.primaryKey == 2)
            #expect(photo.objectID.uri == "ingest://\(coordinator.storeID.uuidString)/Photo/1")
            let data = try JSONEncoder().encode([photo.objectID])
            #expect(String(decoding: data, as: UTF8.self) == "[\"ingest:\\/\\/\(coordinator.storeID.uuidString)\\/Photo\\/1\"]")
            #expect(try JSONDecoder().decode([ObjectID].self, from: data) == [photo.objectID])
            #expect(ObjectID(uri: "ingest://nope/Photo/1") == nil)
            #expect(ObjectID(uri: "ingest://\(coordinator.storeID.uuidString)/Photo/0") == nil)
        }
    }

    @Test(arguments: StoreBackend.available) func metadataIsSavedWithTheRows(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            insertPhoto(context, id: "p1")
            try context.setMetadata(["chunk-000001": 1], forKey: "marker")
            try context.save()
        }
        #expect(try coordinator.metadata(forKey: "marker", as: [String: Int].self) == ["chunk-000001": 1])
        // A failure between the rows and the commit writes neither.
        struct Injected: Error {}
        coordinator.beforeCommit.withLock { $0 = { throw Injected() } }
        try context.performAndWait {
            insertPhoto(context, id: "p2")
            try context.setMetadata(["chunk-000001": 2], forKey: "marker")
            #expect(throws: Injected.self) { try context.save() }
        }
        #expect(try coordinator.count("Photo") == 1)
        #expect(try coordinator.metadata(forKey: "marker", as: [String: Int].self) == ["chunk-000001": 1])
        // The changes are still there; once the failure is gone the save goes through.
        coordinator.beforeCommit.withLock { $0 = nil }
        try context.performAndWait { try context.save() }
        #expect(try coordinator.count("Photo") == 2)
        #expect(try coordinator.metadata(forKey: "marker", as: [String: Int].self) == ["chunk-000001": 2])
    }
}

@Suite struct DeleteCleanupTests {
    @Test(arguments: StoreBackend.available) func deletingOneSideOfAManyToManyRemovesItsJoinRows(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        let (photo, red): (ObjectID, ObjectID) = try context.performAndWait {
            let photo = insertPhoto(context, id: "p")
            let other = insertPhoto(context, id: "q")
            let red = context.insert("Tag"); red.name = "red"
            let blue = context.insert("Tag"); blue.name = "blue"
            photo.addObject(red, toKey: "tags")
            photo.addObject(blue, toKey: "tags")
            other.addObject(red, toKey: "tags")
            try context.save()
            return (photo.objectID, red.objectID)
        }
        let second = ObjectContext(coordinator: coordinator)
        try second.performAndWait {
            second.delete(second.object(with: red))
            try second.save()
        }
        let third = ObjectContext(coordinator: coordinator)
        try third.performAndWait {
            let stored = try third.existingObject(with: photo)
            #expect(stored.objects(forKey: "tags").map { $0.name } == ["blue"])
            let q = try #require(try third.fetch("Photo", where: "id", equals: "q").first)
            #expect(q.objects(forKey: "tags").isEmpty)
        }
    }

    @Test(arguments: StoreBackend.available) func deletingAnInsertedObjectBeforeSavingLeavesNoTrace(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let photo = insertPhoto(context, id: "gone")
            context.delete(photo)
            #expect(photo.isDeleted)
            #expect(!context.hasChanges)
            try context.save()
        }
        #expect(try coordinator.count("Photo") == 0)
    }
}
