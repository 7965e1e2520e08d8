import Foundation
import IngestStore
import IngestTestSupport
import Testing

/// The typed classes in Models.swift, which `ingest codegen` wrote from
/// Fixtures/models/albums.json: they compile here in Swift 6 with strict concurrency, and
/// read and write what dynamic access reads and writes.
@Suite struct TypedClassTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let modelFile = root.appendingPathComponent("Fixtures/models/albums.json")

    static func store() throws -> (PersistentStoreCoordinator, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        let model = try Model.load(json: Data(contentsOf: modelFile))
        return (try PersistentStoreCoordinator(model: model, path: directory.file("albums.sqlite")), directory)
    }

    @Test func theCommittedFileIsWhatCodegenWritesToday() throws {
        let model = try Model.load(json: Data(contentsOf: Self.modelFile))
        let committed = try String(contentsOf: Self.root.appendingPathComponent("Tests/GeneratedModelTests/Models.swift"), encoding: .utf8)
        #expect(try ModelCodegen.swiftSource(for: model, origin: "albums.json") == committed,
                "run: ingest codegen Fixtures/models/albums.json -o Tests/GeneratedModelTests/Models.swift")
    }

    @Test func typedPropertiesRoundTripEveryAttributeTypeThroughTheStore() throws {
        let (coordinator, directory) = try Self.store()
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "typed")
        let taken = Date(timeIntervalSince1970: 1_700_000_000.25)
        let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        let id = try context.performAndWait {
            let photo = context.insert(Photo.self)
            // Required numbers read as their defaults before they are set.
            #expect(photo.views == 0 && photo.rating == 2.5 && photo.isPublic && photo.orientation == 0)
            photo.id = "p1"
            photo.title = "Harbour"
            photo.views = 1_234
            photo.rating = 4.5
            photo.width = 4_032
            photo.orientation = 6
            photo.isPublic = false
            photo.taken = taken
            photo.thumbnail = Data([0, 1, 2, 255])
            photo.uuid = uuid
            photo.price = Decimal(string: "12.34")
            photo.default = "a keyword as a name"
            try context.save()
            return photo.objectID
        }
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        reader.performAndWait {
            let photo = reader.object(with: id, as: Photo.self)
            #expect(photo.id == "p1" && photo.title == "Harbour" && photo.views == 1_234 && photo.rating == 4.5)
            #expect(photo.width == 4_032 && photo.orientation == 6 && photo.isPublic == false && photo.taken == taken)
            #expect(photo.thumbnail == Data([0, 1, 2, 255]) && photo.uuid == uuid && photo.price == Decimal(string: "12.34"))
            #expect(photo.default == "a keyword as a name")
            // Dynamic access reads the same object.
            #expect(photo.managedObject["title"] == .string("Harbour") && photo.managedObject.views == .int(1_234))
            photo.title = nil
            #expect(photo.managedObject["title"] == nil)
        }
    }

    @Test func typedRelationshipsAndFetchRequestsGiveTypedResults() throws {
        let (coordinator, directory) = try Self.store()
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "typed")
        try context.performAndWait {
            let album = context.insert(Album.self)
            album.name = "Trips"
            let sea = context.insert(Tag.self)
            sea.name = "sea"
            for number in 1...3 {
                let photo = context.insert(Photo.self)
                photo.id = "p\(number)"
                photo.views = Int64(number * 10)
                photo.orientation = 1
                photo.album = album
                if number != 2 { photo.addToTags(sea) }
            }
            try context.save()

            let request = Photo.fetchRequest(predicate: try QueryPredicate(format: "views > %@", 10),
                                              sortDescriptors: [FetchSortDescriptor("views", ascending: false)])
            let photos: [Photo] = try context.fetch(request)
            #expect(photos.map(\.id) == ["p3", "p2"])
            #expect(try context.count(for: request) == 2)
            #expect(photos[0].album == album && photos[0].album?.name == "Trips")
            // Album.photos is ordered: in the order the photos joined it.
            #expect(album.photos.map(\.id) == ["p1", "p2", "p3"])
            album.insertIntoPhotos(photos[0], at: 0)
            #expect(album.photos.map(\.id) == ["p3", "p1", "p2"])
            #expect(Set(sea.photos.compactMap(\.id)) == ["p1", "p3"])
            sea.removeFromPhotos(photos[0])
            photos[1].album = nil
            try context.save()
            #expect(Set(sea.photos.compactMap(\.id)) == ["p1"] && album.photos.map(\.id) == ["p3", "p1"])
            #expect(try context.fetch(Tag.fetchRequest()).map(\.name) == ["sea"])
            // A typed object is a predicate argument as it is, for its to-one relationships.
            let inAlbum = Photo.fetchRequest(predicate: try QueryPredicate(format: "album == %@", album),
                                             sortDescriptors: [FetchSortDescriptor("id")])
            #expect(try context.fetch(inAlbum).map(\.id) == ["p1", "p3"])
        }
    }

    /// As in Core Data: a required number without a default reads as zero while unset, and
    /// the save says it is missing.
    @Test func aRequiredNumberLeftUnsetReadsZeroAndFailsTheSaveByName() throws {
        let (coordinator, directory) = try Self.store()
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "typed")
        context.performAndWait {
            let photo = context.insert(Photo.self)
            photo.id = "p"
            #expect(photo.orientation == 0)
            #expect(throws: StoreError.validation(["Photo \"p\": orientation is required"])) { try context.save() }
        }
    }

    /// A subentity's typed class has its parent's properties too; a fetch of the parent's
    /// type returns its objects, which `asClip` tells apart (Core Data's `as? Clip`).
    @Test func aSubentitysTypeInheritsAndAParentsFetchIncludesIt() throws {
        let (coordinator, directory) = try Self.store()
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "typed")
        let clipID = try context.performAndWait {
            let photo = context.insert(Photo.self)
            photo.id = "p1"; photo.orientation = 1
            let clip = context.insert(Clip.self)
            clip.id = "c1"; clip.orientation = 1; clip.title = "Harbour at dusk"; clip.duration = 12.5
            // An inherited many-to-many: the parent's join table.
            let sea = context.insert(Tag.self)
            sea.name = "sea"
            clip.addToTags(sea)
            photo.addToTags(sea)
            try context.save()
            return clip.objectID
        }
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        try reader.performAndWait {
            let photos = try reader.fetch(Photo.fetchRequest(sortDescriptors: [FetchSortDescriptor("id")]))
            #expect(photos.map(\.id) == ["c1", "p1"])
            #expect(photos.map { $0.asClip?.duration } == [12.5, nil])
            #expect(try reader.fetch(Clip.fetchRequest()).map(\.title) == ["Harbour at dusk"])
            #expect(reader.object(with: clipID, as: Clip.self).duration == 12.5)
            #expect(reader.object(with: clipID, as: Photo.self).asClip != nil)
            let sea = try #require(try reader.fetch(Tag.fetchRequest()).first)
            #expect(sea.photos.compactMap(\.id).sorted() == ["c1", "p1"])
            #expect(sea.photos.compactMap(\.asClip).map(\.duration) == [12.5])
            #expect(reader.object(with: clipID, as: Clip.self).tags.map(\.name) == ["sea"])
        }
    }
}
