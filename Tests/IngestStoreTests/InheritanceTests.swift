import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// Entity inheritance: Media (abstract) → Photo, Video → Clip, and Album's items, read from
/// an Xcode model. One table per hierarchy; a fetch of a parent returns its subentities'
/// objects as their own entities.
@Suite struct InheritanceTests {
    static let model = try! Model.load(xcdatamodel: XcodeModelTests.models.appendingPathComponent("Media.xcdatamodel"))

    /// A store holding Photo m1, Video m2 and Clip m3 in album "trip" (m1, m2), saved.
    static func store(on backend: StoreBackend) throws -> (PersistentStoreCoordinator, TemporaryDirectory, [String: ObjectID]) {
        let (coordinator, directory) = try TestModel.store(model, on: backend)
        let context = ObjectContext(coordinator: coordinator, name: "setup")
        let ids = try context.performAndWait {
            let album = context.insert("Album"); album.name = "trip"
            let photo = context.insert("Photo"); photo.id = "m1"; photo.title = "Harbour"; photo.views = 5; photo.width = .int(800)
            let video = context.insert("Video"); video.id = "m2"; video.title = "Dock"; video.views = 9; video.duration = .double(12.5)
            let clip = context.insert("Clip"); clip.id = "m3"; clip.title = "Pier"; clip.views = 1; clip.duration = .double(3); clip.source = "cam"
            photo.setObject(album, forKey: "album")
            video.setObject(album, forKey: "album")
            try context.save()
            return ["trip": album.objectID, "m1": photo.objectID, "m2": video.objectID, "m3": clip.objectID]
        }
        return (coordinator, directory, ids)
    }

    static func describe(_ objects: [ManagedObject]) -> [String] {
        objects.map { "\($0.entityName) \($0.id!.stringValue!)" }
    }

    @Test func theXcodeModelsSubentitiesInheritTheirParentsProperties() throws {
        let clip = try #require(Self.model.entity("Clip"))
        #expect(clip.parent == "Video" && !clip.isAbstract && Self.model.entity("Media")!.isAbstract)
        #expect(clip.attributes.map(\.name) == ["id", "title", "views", "duration", "source"])
        #expect(clip.declaredAttributes.map(\.name) == ["source"])
        #expect(clip.relationships.map(\.name) == ["album"] && clip.uniquenessConstraints == [["id"]])
        #expect(Self.model.entity("Album")!.relationship("items")!.isOrdered)
        // The JSON form keeps what each entity declares, and reads back to the same model.
        let json = String(decoding: Self.model.jsonData(), as: UTF8.self)
        #expect(json.contains(#"{"attributes":[{"indexed":false,"name":"source","optional":true,"type":"string"}],"name":"Clip","parent":"Video","relationships":[],"unique":[]}"#))
        #expect(try Model.load(json: Self.model.jsonData()) == Self.model)
    }

    @Test(arguments: StoreBackend.available) func aFetchOfTheParentReturnsItsSubentitiesObjectsAsTheirOwnEntities(backend: StoreBackend) throws {
        let (coordinator, directory, ids) = try Self.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "reader")
        try context.performAndWait {
            let byID = [FetchSortDescriptor("id")]
            let media = try context.fetch(FetchRequest("Media", sortDescriptors: byID))
            #expect(Self.describe(media) == ["Photo m1", "Video m2", "Clip m3"])
            #expect(media[0].width == .int(800) && media[1].duration == .double(12.5) && media[2].source == "cam")
            #expect(Self.describe(try context.fetch(FetchRequest("Video", sortDescriptors: byID))) == ["Video m2", "Clip m3"])
            var own = FetchRequest("Video")
            own.includesSubentities = false
            #expect(Self.describe(try context.fetch(own)) == ["Video m2"])
            #expect(try context.count(for: own) == 1)
            #expect(try context.count("Media") == 3 && context.count(for: FetchRequest("Video")) == 2)
            #expect(try coordinator.count("Photo") == 1 && coordinator.count("Clip") == 1)
            // IDs name the hierarchy's table; the object knows its entity.
            #expect(media.map(\.objectID.entityName) == ["Media", "Media", "Media"])
            #expect(media.map(\.objectID) == [ids["m1"], ids["m2"], ids["m3"]])
            // Unsaved objects count where they belong.
            let photo = context.insert("Photo"); photo.id = "m4"
            #expect(Self.describe(try context.fetch(FetchRequest("Media", sortDescriptors: byID))) == ["Photo m1", "Video m2", "Clip m3", "Photo m4"])
            #expect(Self.describe(try context.fetch(FetchRequest("Video", sortDescriptors: byID))) == ["Video m2", "Clip m3"])
            #expect(try context.count("Media") == 4 && context.count("Video") == 2)
        }
        // An ID alone (a fault in a fresh context) becomes an object of the row's own entity.
        let fresh = ObjectContext(coordinator: coordinator, name: "fresh")
        fresh.performAndWait {
            let clip = fresh.object(with: ids["m3"]!)
            #expect(clip.entityName == "Clip" && clip.source == "cam" && clip.title == "Pier")
            let parsed = fresh.object(with: ObjectID(uri: ids["m2"]!.uri.replacingOccurrences(of: "/Media/", with: "/Video/"))!)
            #expect(parsed.entityName == "Video" && parsed.objectID == ids["m2"])
        }
    }

    @Test(arguments: StoreBackend.available) func predicatesSortsAndRelationshipsWorkOverInheritedProperties(backend: StoreBackend) throws {
        let (coordinator, directory, ids) = try Self.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "reader")
        try context.performAndWait {
            func fetch(_ entity: String, _ format: String, by key: String, ascending: Bool = true) throws -> [String] {
                Self.describe(try context.fetch(FetchRequest(entity, predicate: try QueryPredicate(format: format),
                                                             sortDescriptors: [FetchSortDescriptor(key, ascending: ascending)])))
            }
            #expect(try fetch("Video", "views > 0", by: "views", ascending: false) == ["Video m2", "Clip m3"])
            #expect(try fetch("Media", "title BEGINSWITH 'P' OR title == 'Harbour'", by: "title") == ["Photo m1", "Clip m3"])
            #expect(try fetch("Video", "duration > 5", by: "id") == ["Video m2"])
            #expect(try fetch("Media", "album.name == 'trip'", by: "views") == ["Photo m1", "Video m2"])
            #expect(try fetch("Clip", "source == 'cam' AND views < 2", by: "id") == ["Clip m3"])
            #expect(throws: QueryPredicateError.self) { try fetch("Media", "duration > 5", by: "id") }
            let albums = try context.fetch(FetchRequest("Album", predicate: try QueryPredicate(format: "ANY items.views > 8")))
            #expect(albums.map(\.objectID) == [ids["trip"]])
            // Album.items is ordered (Xcode's "Ordered"): in the order the links were made.
            let items = albums[0].objects(forKey: "items")
            #expect(Self.describe(items) == ["Photo m1", "Video m2"])
            #expect(items[1].duration == .double(12.5))
            #expect(items[0].object(forKey: "album")?.objectID == ids["trip"])
            // A delete cascades through the relationship to the parent entity.
            context.delete(albums[0])
            try context.save()
        }
        #expect(try coordinator.count("Media") == 1 && coordinator.count("Clip") == 1)
    }

    @Test(arguments: StoreBackend.available) func aParentsUniquenessConstraintSpansTheHierarchy(backend: StoreBackend) throws {
        let (coordinator, directory, ids) = try Self.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "writer")
        context.mergePolicy = .objectTrump
        try context.performAndWait {
            let video = context.insert("Video"); video.id = "m1"; video.title = "not a photo"
            let error = try #require(throws: StoreError.self) { try context.save() }
            #expect(error.description == "the save conflicts with uniqueness constraints: Video \"m1\" has id = \"m1\", as the stored Photo row \(ids["m1"]!.primaryKey!) does; no merge policy makes one entity's object another's")
            context.rollback()
            let photo = context.insert("Photo"); photo.id = "m1"; photo.title = "Harbour again"
            try context.save()
            #expect(photo.objectID == ids["m1"])
        }
        #expect(try coordinator.count("Media") == 3)
    }

    @Test(arguments: StoreBackend.available) func changesAndDeletesOfSubentityObjectsAreSavedAndRecorded(backend: StoreBackend) throws {
        let (coordinator, directory, ids) = try Self.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "editor")
        let token = try coordinator.currentHistoryToken()
        try context.performAndWait {
            let clip = context.object(with: ids["m3"]!)
            clip.source = "phone"
            clip.title = "Jetty"
            context.delete(context.object(with: ids["m1"]!))
            try context.save()
        }
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        try reader.performAndWait {
            let clips = try reader.fetch(FetchRequest("Clip"))
            #expect(clips.map { "\($0.title!) \($0.source!)" } == ["\"Jetty\" \"phone\""])
            #expect(Self.describe(try reader.fetch(FetchRequest("Media", sortDescriptors: [FetchSortDescriptor("id")]))) == ["Video m2", "Clip m3"])
        }
        let changes = try coordinator.fetchHistory(after: token).changes
        #expect(changes.map { "\($0.kind) \($0.entity) \($0.objectID.entityName)" }.sorted() == ["delete Photo Media", "update Clip Media"])
    }

    @Test func oneTableHoldsTheHierarchy() throws {
        let (coordinator, directory, _) = try Self.store(on: .sqlite)
        _ = coordinator
        let db = try SQLiteFile(directory.file("store.sqlite"), readOnly: true)
        let tables = try db.strings("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%' ORDER BY name")
        let columns = try db.strings("SELECT name FROM pragma_table_info('Media')")
        let entities = try db.ints("SELECT \"_entity\" FROM \"Media\" ORDER BY id")
        #expect(tables == ["Album", "Media"])
        #expect(columns == ["_pk", "_entity", "id", "title", "views", "_album", "_album_order", "width", "duration", "source", "_placeholder"])
        // From the names alone (FNV-1a), pinned: stores keep them, so they must never change.
        #expect(entities == [1_394_710_915, 1_533_528_076, 1_396_562_715])
        #expect(["Photo", "Video", "Clip"].map(Model.entityCode) == entities)
    }

    @Test func modelsWithInheritanceProblemsAreRefusedByName() {
        func problem(_ entities: [Entity]) -> String? {
            do { _ = try Model(entities: entities).validated(); return nil } catch { return "\(error)" }
        }
        let media = Entity("Media", attributes: [Attribute("id", .string)])
        #expect(problem([media, Entity("Photo", parent: "Medium", attributes: [])]) == "invalid model: entity Photo has unknown parent 'Medium'")
        #expect(problem([Entity("A", parent: "B", attributes: []), Entity("B", parent: "A", attributes: [])])
            == "invalid model: entity A's parents form a cycle (A, B)")
        #expect(problem([media, Entity("Photo", parent: "Media", attributes: [Attribute("id", .string)])])
            == "invalid model: Photo.id is already inherited from Media")
        #expect(problem([media, Entity("Photo", parent: "Media", attributes: [Attribute("code", .string)]),
                         Entity("Video", parent: "Media", attributes: [Attribute("code", .int64)])])
            == "invalid model: Photo.code and Video.code would share Media's table (one table holds a hierarchy): give them different names")
        #expect(problem([media, Entity("Photo", parent: "Media", attributes: [Attribute("width", .int32)], uniquenessConstraints: [["id"]])])
            == "invalid model: uniqueness constraint on Photo (id) names only inherited attributes: declare it on the entity that declares them, or include an attribute Photo declares (its hierarchy shares one table, and one index)")
    }

    /// A model lists its entities in any order (Xcode sorts them by name): children before
    /// parents make the same table, and reordering the model of a store, or adding an entity
    /// before a hierarchy's, reads every row as the entity it was written as.
    @Test(arguments: StoreBackend.reopenable) func theOrderOfTheModelsEntitiesChangesNothing(backend: StoreBackend) throws {
        let shuffled = Model(entities: [Self.model.entity("Clip")!, Self.model.entity("Album")!, Self.model.entity("Video")!,
                                        Self.model.entity("Photo")!, Self.model.entity("Media")!].map { entity in
            var declared = entity
            declared.attributes = Array(entity.declaredAttributes)
            declared.relationships = Array(entity.declaredRelationships)
            declared.uniquenessConstraints = Array(entity.declaredUniquenessConstraints)
            declared.inheritedCounts = Entity.InheritedCounts()
            return declared
        })
        #expect(shuffled.entity("Clip")!.attributes.map(\.name) == ["id", "title", "views", "duration", "source"])
        let (coordinator, directory) = try TestModel.store(shuffled, on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "shuffled")
        try context.performAndWait {
            let clip = context.insert("Clip"); clip.id = "c1"; clip.source = "cam"; clip.duration = .double(2)
            let photo = context.insert("Photo"); photo.id = "p1"
            try context.save()
            context.reset()
            #expect(Self.describe(try context.fetch(FetchRequest("Video"))) == ["Clip c1"])
            #expect(try context.fetch(FetchRequest("Video")).first?.source == "cam")
            #expect(Self.describe(try context.fetch(FetchRequest("Media", sortDescriptors: [FetchSortDescriptor("id")]))) == ["Clip c1", "Photo p1"])
        }
        // The store again, with an entity added in front and the rest reversed.
        var entities = Self.model.entities.reversed().map { $0 }
        entities.insert(Entity("Zebra", attributes: [Attribute("name", .string)]), at: 0)
        let (stored, storedDirectory, ids) = try Self.store(on: backend)
        _ = (stored, storedDirectory)
        let reordered = backend == .sqlite
            ? try PersistentStoreCoordinator(model: Model(entities: entities), path: storedDirectory.file("store.sqlite"))
            : try PersistentStoreCoordinator(model: Model(entities: entities), url: URL(string: stored.path)!)
        let reader = ObjectContext(coordinator: reordered, name: "reordered")
        try reader.performAndWait {
            let photos = try reader.fetch(FetchRequest("Photo"))
            let media = try reader.fetch(FetchRequest("Media", sortDescriptors: [FetchSortDescriptor("id")]))
            #expect(Self.describe(photos) == ["Photo m1"])
            #expect(Self.describe(media) == ["Photo m1", "Video m2", "Clip m3"])
            #expect(reader.object(with: ids["m3"]!).entityName == "Clip")
        }
    }

    @Test(arguments: StoreBackend.available) func controllersPrefetchingAndChecksFollowSubentities(backend: StoreBackend) throws {
        let (coordinator, directory, ids) = try Self.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "viewer")
        try context.performAndWait {
            let controller = try FetchedResultsController(request: FetchRequest("Video", sortDescriptors: [FetchSortDescriptor("id")]), context: context)
            try controller.performFetch()
            #expect(Self.describe(controller.fetchedObjects) == ["Video m2", "Clip m3"])
            let video = context.insert("Video"); video.id = "m5"
            let photo = context.insert("Photo"); photo.id = "m4"
            try context.save()
            #expect(Self.describe(controller.fetchedObjects) == ["Video m2", "Clip m3", "Video m5"])
            // Prefetching a relationship over objects of several entities, the first without it set.
            var request = FetchRequest("Media", sortDescriptors: [FetchSortDescriptor("id", ascending: false)])
            request.relationshipKeyPathsForPrefetching = ["album"]
            context.reset()
            let media = try context.fetch(request)
            #expect(Self.describe(media) == ["Video m5", "Photo m4", "Clip m3", "Video m2", "Photo m1"])
            #expect(media.compactMap { $0.object(forKey: "album")?.objectID } == [ids["trip"], ids["trip"]])
        }
        // `ingest status --check` on PostgreSQL: HierarchyImportTests.
        if backend.speaksSQLite { #expect(try coordinator.integrityProblems() == []) }
    }
}
