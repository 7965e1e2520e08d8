import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// Batch delete and batch update requests (Core Data's `NSBatchDeleteRequest` and
/// `NSBatchUpdateRequest`): SQL in the store, delete rules honoured, results by count or
/// IDs, merged into contexts, recorded in the history.
@Suite struct BatchRequestTests {
    /// Photos p1…p5 with 1…5 views (p1 and p2 by ana, p1 tagged sea, p3 in album "work" of
    /// folder "work"), folder "trips" with an empty album "2026". Object IDs by name.
    static func store(on backend: StoreBackend) throws -> (PersistentStoreCoordinator, TemporaryDirectory, [String: ObjectID]) {
        let (coordinator, directory) = try TestModel.store(on: backend)
        let context = ObjectContext(coordinator: coordinator, name: "setup")
        let ids = try context.performAndWait {
            var ids: [String: ManagedObject] = [:]
            for n in 1...5 {
                let photo = insertPhoto(context, id: "p\(n)", title: "T\(n)")
                photo.views = .int(Int64(n))
                ids["p\(n)"] = photo
            }
            let ana = context.insert("Photographer")
            ana.id = "ana"
            ids["p1"]!.setObject(ana, forKey: "whoTook")
            ids["p2"]!.setObject(ana, forKey: "whoTook")
            let sea = context.insert("Tag")
            sea.name = "sea"
            ids["p1"]!.addObject(sea, toKey: "tags")
            for (folderName, albumName) in [("trips", "2026"), ("work", "work")] {
                let folder = context.insert("Folder")
                folder.name = .string(folderName)
                let album = context.insert("Album")
                album.name = .string(albumName)
                album.setObject(folder, forKey: "folder")
                ids[folderName] = folder
                ids["album " + albumName] = album
            }
            ids["p3"]!.setObject(ids["album work"]!, forKey: "album")
            ids["ana"] = ana
            ids["sea"] = sea
            try context.save()
            return ids.mapValues(\.objectID)
        }
        return (coordinator, directory, ids)
    }

    /// The stored photos as `id:title:views`, by id.
    static func photos(_ coordinator: PersistentStoreCoordinator) throws -> [String] {
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        return try reader.performAndWait {
            try reader.fetch(FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("id")])).map { photo in
                "\(photo.id?.stringValue ?? "-"):\(photo.title?.stringValue ?? "nil"):\(photo.views.map { "\($0)" } ?? "nil")"
            }
        }
    }

    @Test(arguments: StoreBackend.available) func aBatchDeleteRemovesTheMatchingRowsAndReturnsTheirCountOrIDs(backend: StoreBackend) throws {
        let (coordinator, directory, ids) = try Self.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let byIDs = try coordinator.execute(BatchDeleteRequest(entity: "Photo", predicate: try QueryPredicate(format: "views > %d", 3),
                                                               resultType: .objectIDs))
        #expect(byIDs.count == 2)
        #expect(byIDs.objectIDs == [ids["p4"]!, ids["p5"]!])
        #expect(byIDs.changes.deleted == [ids["p4"]!, ids["p5"]!] && byIDs.changes.updated.isEmpty)
        let counted = try coordinator.execute(BatchDeleteRequest(entity: "Photo", predicate: try QueryPredicate(format: "title == %@", "T3")))
        #expect(counted.count == 1 && counted.objectIDs == nil)
        let none = try coordinator.execute(BatchDeleteRequest(entity: "Photo", predicate: try QueryPredicate(format: "views > %d", 100)))
        #expect(none.count == 0 && none.changes.deleted.isEmpty)
        #expect(try coordinator.count("Photo") == 2)
        #expect(try Self.photos(coordinator) == ["p1:T1:1", "p2:T2:2"])
    }

    @Test(arguments: StoreBackend.available) func aBatchDeleteNullifiesLinksToTheDeletedRows(backend: StoreBackend) throws {
        let (coordinator, directory, ids) = try Self.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        // ana's photos lose their photographer; p1's tag loses p1.
        let ana = try coordinator.execute(BatchDeleteRequest(entity: "Photographer"))
        #expect(ana.count == 1 && ana.changes.deleted == [ids["ana"]!])
        #expect(ana.changes.updated == [ids["p1"]!, ids["p2"]!])
        let p1 = try coordinator.execute(BatchDeleteRequest(entity: "Photo", predicate: try QueryPredicate(format: "id == %@", "p1")))
        #expect(p1.changes.deleted == [ids["p1"]!] && p1.changes.updated == [ids["sea"]!])
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        let (photographer, tagged) = try reader.performAndWait {
            (try reader.existingObject(with: ids["p2"]!).object(forKey: "whoTook")?.objectID,
             try reader.existingObject(with: ids["sea"]!).objects(forKey: "photos").count)
        }
        #expect(photographer == nil && tagged == 0)
    }

    @Test(arguments: StoreBackend.available) func aBatchDeleteCascadesAndADenyRuleRefusesItWhole(backend: StoreBackend) throws {
        let (coordinator, directory, ids) = try Self.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        // Folder → albums cascades; the album "2026" has no photos, so its deny rule allows it.
        let trips = try coordinator.execute(BatchDeleteRequest(entity: "Folder", predicate: try QueryPredicate(format: "name == %@", "trips"),
                                                               resultType: .objectIDs))
        #expect(trips.count == 1 && trips.objectIDs == [ids["trips"]!])
        #expect(trips.changes.deleted == [ids["trips"]!, ids["album 2026"]!])
        #expect(try coordinator.count("Album") == 1)
        // The album "work" holds p3 and denies: the folder, its album and nothing else stay.
        let request = BatchDeleteRequest(entity: "Folder", predicate: try QueryPredicate(format: "name == %@", "work"))
        #expect(throws: StoreError.validation([ValidationProblem(stringLiteral: "cannot delete Album row \(ids["album work"]!.primaryKey!): Album.photos has 1 related object(s) and the deny rule")])) {
            try coordinator.execute(request)
        }
        do {
            _ = try coordinator.execute(request)
        } catch StoreError.validation(let problems) {
            #expect(problems.map(\.rule) == [.deleteDenied] && problems.map(\.objectID) == [ids["album work"]!])
        }
        #expect(try coordinator.count("Folder") == 1 && coordinator.count("Album") == 1 && coordinator.count("Photo") == 5)
        // With p3 deleted too (first), the deny rule has nothing left to protect.
        try coordinator.execute(BatchDeleteRequest(entity: "Photo", predicate: try QueryPredicate(format: "id == %@", "p3")))
        #expect(try coordinator.execute(request).changes.deleted == [ids["work"]!, ids["album work"]!])
        #expect(try coordinator.count("Album") == 0)
    }

    @Test(arguments: StoreBackend.available) func aBatchUpdateSetsTheValuesOfTheMatchingRows(backend: StoreBackend) throws {
        let (coordinator, directory, ids) = try Self.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let request = try BatchUpdateRequest(entity: "Photo", predicate: try QueryPredicate(format: "views < %d", 3),
                                             propertiesToUpdate: ["title": "bulk", "views": 0], resultType: .objectIDs)
        let result = try coordinator.execute(request)
        #expect(result.count == 2 && result.objectIDs == [ids["p1"]!, ids["p2"]!])
        #expect(result.changes.updated == [ids["p1"]!, ids["p2"]!] && result.changes.deleted.isEmpty)
        #expect(try Self.photos(coordinator) == ["p1:bulk:0", "p2:bulk:0", "p3:T3:3", "p4:T4:4", "p5:T5:5"])
        // nil clears an optional attribute; a value comes as a Swift value or a Value.
        let cleared = try coordinator.execute(BatchUpdateRequest(entity: "Photo", predicate: try QueryPredicate(format: "id == %@", "p5"),
                                                                 values: ["title": nil, "views": .int(50)]))
        #expect(cleared.count == 1 && cleared.objectIDs == nil)
        #expect(try Self.photos(coordinator).last == "p5:nil:50")
        // Predicates through a to-one and a to-many select the rows as a fetch would.
        let byAna = try coordinator.execute(try BatchUpdateRequest(entity: "Photo", predicate: try QueryPredicate(format: "whoTook.id == %@", "ana"),
                                                                   propertiesToUpdate: ["views": 7], resultType: .objectIDs))
        let tagged = try coordinator.execute(try BatchUpdateRequest(entity: "Photo", predicate: try QueryPredicate(format: "ANY tags.name == %@", "sea"),
                                                                    propertiesToUpdate: ["title": "tagged"], resultType: .objectIDs))
        #expect(byAna.objectIDs == [ids["p1"]!, ids["p2"]!] && tagged.objectIDs == [ids["p1"]!])
        #expect(try Self.photos(coordinator) == ["p1:tagged:7", "p2:bulk:7", "p3:T3:3", "p4:T4:4", "p5:nil:50"])
    }

    /// Media (abstract) → Photo, Video → Clip: one table; requests follow `includesSubentities`
    /// and the history names each row's own entity.
    @Test(arguments: StoreBackend.available) func requestsOnAHierarchyActOnSubentitiesAndNameTheirEntities(backend: StoreBackend) throws {
        let (coordinator, directory, ids) = try InheritanceTests.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let start = try coordinator.currentHistoryToken()
        let videos = try coordinator.execute(try BatchUpdateRequest(entity: "Video", propertiesToUpdate: ["duration": 1.5], resultType: .objectIDs))
        // Row numbers differ by store (the order a save inserts in): IDs come in row order.
        let videoIDs: [ObjectID] = [ids["m2"]!, ids["m3"]!].sorted { (a: ObjectID, b: ObjectID) -> Bool in a.primaryKey! < b.primaryKey! }
        #expect(videos.objectIDs == videoIDs)
        var onlyVideos = try BatchUpdateRequest(entity: "Video", propertiesToUpdate: ["duration": 2.5], resultType: .objectIDs)
        onlyVideos.includesSubentities = false
        #expect(try coordinator.execute(onlyVideos).objectIDs == [ids["m2"]!])
        let deleted = try coordinator.execute(BatchDeleteRequest(entity: "Media", predicate: try QueryPredicate(format: "views > %d", 3)))
        #expect(deleted.count == 2 && deleted.changes.deleted == [ids["m1"]!, ids["m2"]!])
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        let left = try reader.performAndWait { try reader.fetch(FetchRequest("Media")).map { "\($0.entityName) \($0.duration ?? .double(0))" } }
        #expect(left == ["Clip 1.5"])
        let lines = HistoryTests.lines(try coordinator.fetchHistory(after: start).transactions)
        let (m1, m2, m3) = (ids["m1"]!.primaryKey!, ids["m2"]!.primaryKey!, ids["m3"]!.primaryKey!)
        // Explicit types: this test's literals otherwise took 12 s of a debug build to type-check.
        let updates: [(Int64, String)] = [(m2, "update Video \(m2) duration"), (m3, "update Clip \(m3) duration")]
        let first: [String] = updates.sorted { $0.0 < $1.0 }.map(\.1)
        #expect(Array(lines.prefix(3)) == first + ["update Video \(m2) duration"])
        let deletes: [(Int64, String)] = [(m1, "delete Photo \(m1) id=\"m1\""), (m2, "delete Video \(m2) id=\"m2\"")]
        let deleteLines: [String] = deletes.sorted { $0.0 < $1.0 }.map(\.1)
        #expect(Array(lines.dropFirst(3)) == deleteLines)
    }

    @Test(arguments: StoreBackend.available) func aBatchUpdateChecksItsValuesAgainstTheModelAndWritesNothingOtherwise(backend: StoreBackend) throws {
        let (coordinator, directory, _) = try Self.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        #expect(throws: StoreError.unknownProperty(entity: "Photo", property: "nope")) {
            try coordinator.execute(try BatchUpdateRequest(entity: "Photo", propertiesToUpdate: ["nope": 1, "title": "x"]))
        }
        #expect(throws: StoreError.validation(["the batch update of Photo: views: a string is not a valid int64"])) {
            try coordinator.execute(try BatchUpdateRequest(entity: "Photo", propertiesToUpdate: ["views": "many"]))
        }
        #expect(throws: StoreError.validation(["the batch update of Photo: id is required"])) {
            try coordinator.execute(try BatchUpdateRequest(entity: "Photo", propertiesToUpdate: ["id": nil, "title": "x"]))
        }
        #expect(throws: StoreError.validation(["the batch update of Photo: whoTook: is a relationship: a batch update sets attributes only"])) {
            try coordinator.execute(try BatchUpdateRequest(entity: "Photo", propertiesToUpdate: ["whoTook": nil]))
        }
        #expect(throws: StoreError.unknownEntity("Film")) {
            try coordinator.execute(BatchDeleteRequest(entity: "Film"))
        }
        // A value the uniqueness constraint refuses: the store's error, nothing written.
        do {
            _ = try coordinator.execute(try BatchUpdateRequest(entity: "Photo", propertiesToUpdate: ["id": "same"]))
            Issue.record("two photos with one id were written")
        } catch let error as StoreError {
            #expect(error.reason == .constraint(.unique))
        }
        #expect(try Self.photos(coordinator) == ["p1:T1:1", "p2:T2:2", "p3:T3:3", "p4:T4:4", "p5:T5:5"])
    }

    @Test(arguments: StoreBackend.available) func contextsMergeTheChangesExplicitlyOrAutomatically(backend: StoreBackend) throws {
        let (coordinator, directory, ids) = try Self.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let explicit = ObjectContext(coordinator: coordinator, name: "explicit")
        let executing = ObjectContext(coordinator: coordinator, name: "executing")
        let (p1, p4) = try explicit.performAndWait { (try explicit.existingObject(with: ids["p1"]!), try explicit.existingObject(with: ids["p4"]!)) }
        let own = try executing.performAndWait { try executing.existingObject(with: ids["p1"]!) }
        let update = try executing.performAndWait {
            try executing.execute(try BatchUpdateRequest(entity: "Photo", predicate: try QueryPredicate(format: "id == %@", "p1"),
                                                         propertiesToUpdate: ["title": "bulk"]))
        }
        let delete = try coordinator.execute(BatchDeleteRequest(entity: "Photo", predicate: try QueryPredicate(format: "id == %@", "p4")))
        // The executing context merged its own request; the other one still shows the old state.
        executing.performAndWait { #expect(own.title == "bulk") }
        explicit.performAndWait { #expect(p1.title == "T1" && !p4.isDeleted) }
        ObjectContext.mergeChanges(fromRemoteContextSave: update.changes, into: [explicit])
        ObjectContext.mergeChanges(fromRemoteContextSave: delete.changes, into: [explicit])
        let (registered, title, deleted, fetched) = try explicit.performAndWait {
            (explicit.registeredObjectCount, p1.title, p4.isDeleted, try explicit.fetch(FetchRequest("Photo")).count)
        }
        #expect(registered == 1 && title == "bulk" && deleted && fetched == 4)
    }

    /// A main context that merges automatically drops the deleted objects and shows the updated values.
    @MainActor
    @Test(arguments: StoreBackend.available) func aMainContextMergingAutomaticallyFollowsBatchRequests(backend: StoreBackend) async throws {
        let (coordinator, directory, ids) = try Self.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let main = ObjectContext(.main, coordinator: coordinator, name: "main")
        var merged: [SaveNotice] = []
        let (p1, p2) = try main.performAndWait {
            main.automaticallyMergesChangesFromCoordinator = true
            main.onDidMerge = { merged.append($0) }
            return (try main.existingObject(with: ids["p1"]!), try main.existingObject(with: ids["p2"]!))
        }
        let update = try BatchUpdateRequest(entity: "Photo", predicate: try QueryPredicate(format: "id == %@", "p1"), propertiesToUpdate: ["views": 100])
        let delete = BatchDeleteRequest(entity: "Photo", predicate: try QueryPredicate(format: "id == %@", "p2"))
        let results = try await Task.detached {
            (try coordinator.execute(update), try coordinator.execute(delete))
        }.value
        await Task.yield()
        await MainActor.run {}
        main.performAndWait {
            #expect(merged == [results.0.changes, results.1.changes])
            #expect(p1.views == .int(100))
            #expect(p2.isDeleted)
        }
    }

    @Test(arguments: StoreBackend.available) func batchRequestsAreRecordedInTheHistoryWithTheirAuthor(backend: StoreBackend) throws {
        let (coordinator, directory, ids) = try Self.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let start = try coordinator.currentHistoryToken()
        let editor = ObjectContext(coordinator: coordinator, name: "editor")
        try editor.performAndWait {
            _ = try editor.execute(try BatchUpdateRequest(entity: "Photo", predicate: try QueryPredicate(format: "views >= %d", 4),
                                                      propertiesToUpdate: ["views": 0, "title": "old"]))
        }
        try coordinator.execute(BatchDeleteRequest(entity: "Photographer"))
        let fetch = try coordinator.fetchHistory(after: start)
        #expect(fetch.transactions.map(\.author) == ["editor", "batch delete"])
        let (p1, p2, p4, p5, ana) = (ids["p1"]!.primaryKey!, ids["p2"]!.primaryKey!, ids["p4"]!.primaryKey!, ids["p5"]!.primaryKey!,
                                     ids["ana"]!.primaryKey!)
        #expect(HistoryTests.lines(fetch.transactions) == [
            "update Photo \(p4) title,views", "update Photo \(p5) title,views",
            "update Photo \(p1) whoTook", "update Photo \(p2) whoTook",
            "delete Photographer \(ana) id=\"ana\"",
        ])
    }
}
