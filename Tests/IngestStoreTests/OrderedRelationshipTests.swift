import Foundation
import Synchronization
import IngestTestSupport
import Testing
@testable import IngestStore

/// Ordered to-many relationships (Core Data's `NSOrderedSet`): a playlist's tracks (one
/// to many) and a track's tags (many to many) keep the order they were put in, through
/// saves, reads in other contexts, moves, removals and undo.
@Suite struct OrderedRelationshipTests {
    static let model = Model(entities: [
        Entity("Playlist", attributes: [Attribute("name", .string)],
               relationships: [Relationship("tracks", to: "Track", inverse: "playlist", toMany: true, ordered: true)],
               uniquenessConstraints: [["name"]]),
        Entity("Track", attributes: [Attribute("title", .string)],
               relationships: [Relationship("playlist", to: "Playlist", inverse: "tracks"),
                               Relationship("tags", to: "Tag", inverse: "tracks", toMany: true, ordered: true)]),
        Entity("Tag", attributes: [Attribute("name", .string)],
               relationships: [Relationship("tracks", to: "Track", inverse: "tags", toMany: true)]),
    ])

    static func titles(_ objects: [ManagedObject]) -> [String] { objects.map { ($0.entityName == "Tag" ? $0.name : $0.title)!.stringValue! } }

    /// `key`'s members of the object `id`, read by a fresh context.
    static func stored(_ coordinator: PersistentStoreCoordinator, _ id: ObjectID, _ key: String) -> [String] {
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        return reader.performAndWait { titles(reader.object(with: id).objects(forKey: key)) }
    }

    @Test(arguments: StoreBackend.available) func aOneToManyKeepsItsOrderThroughInsertsMovesAndRemovals(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(Self.model, on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "editor")
        let (mix, other, tracks) = try context.performAndWait {
            let mix = context.insert("Playlist"); mix.name = "mix"
            let other = context.insert("Playlist"); other.name = "other"
            let tracks = (1...4).map { number in
                let track = context.insert("Track"); track.title = .string("t\(number)"); return track
            }
            for track in tracks.prefix(3) { mix.addObject(track, toKey: "tracks") }
            mix.insertObject(tracks[3], at: 1, forKey: "tracks")
            #expect(Self.titles(mix.objects(forKey: "tracks")) == ["t1", "t4", "t2", "t3"])
            try context.save()
            return (mix.objectID, other.objectID, tracks.map(\.objectID))
        }
        #expect(Self.stored(coordinator, mix, "tracks") == ["t1", "t4", "t2", "t3"])
        try context.performAndWait {
            context.reset()
            let playlist = context.object(with: mix)
            playlist.insertObject(context.object(with: tracks[2]), at: 0, forKey: "tracks")   // a move
            playlist.removeObject(context.object(with: tracks[0]), fromKey: "tracks")
            try context.save()
        }
        #expect(Self.stored(coordinator, mix, "tracks") == ["t3", "t4", "t2"])
        try context.performAndWait {
            // Moving a track to another playlist through its to-one: it leaves this order, ends the other's.
            context.object(with: tracks[3]).setObject(context.object(with: other), forKey: "playlist")
            context.object(with: tracks[0]).setObject(context.object(with: other), forKey: "playlist")
            #expect(Self.titles(context.object(with: mix).objects(forKey: "tracks")) == ["t3", "t2"])
            try context.save()
        }
        #expect(Self.stored(coordinator, mix, "tracks") == ["t3", "t2"])
        #expect(Self.stored(coordinator, other, "tracks") == ["t4", "t1"])
    }

    @Test(arguments: StoreBackend.available) func aManyToManyKeepsItsOrderOnItsOrderedSide(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(Self.model, on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "editor")
        let (track, rock) = try context.performAndWait {
            let track = context.insert("Track"); track.title = "song"
            let tags = ["rock", "pop", "jazz"].map { name in
                let tag = context.insert("Tag"); tag.name = .string(name); return tag
            }
            for tag in tags { track.addObject(tag, toKey: "tags") }
            track.insertObject(tags[2], at: 0, forKey: "tags")
            try context.save()
            return (track.objectID, tags[0].objectID)
        }
        #expect(Self.stored(coordinator, track, "tags") == ["jazz", "rock", "pop"])
        #expect(Self.stored(coordinator, rock, "tracks") == ["song"])
        try context.performAndWait {
            context.reset()
            let song = context.object(with: track)
            song.insertObject(context.object(with: rock), at: 5, forKey: "tags")   // past the end: last
            try context.save()
        }
        #expect(Self.stored(coordinator, track, "tags") == ["jazz", "pop", "rock"])
    }

    @Test(arguments: StoreBackend.available) func undoPutsAMovedMemberBack(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(Self.model, on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "editor")
        let mix = try context.performAndWait {
            let mix = context.insert("Playlist")
            for title in ["a", "b", "c"] {
                let track = context.insert("Track"); track.title = .string(title)
                mix.addObject(track, toKey: "tracks")
            }
            try context.save()
            return mix.objectID
        }
        context.performAndWait { context.undoManager = ContextUndoManager() }
        let playlist = context.performAndWait { context.object(with: mix) }
        context.performAndWait {
            let c = playlist.objects(forKey: "tracks")[2]
            playlist.insertObject(c, at: 0, forKey: "tracks")
        }
        try context.performAndWait {
            #expect(Self.titles(playlist.objects(forKey: "tracks")) == ["c", "a", "b"])
            context.undo()
            #expect(Self.titles(playlist.objects(forKey: "tracks")) == ["a", "b", "c"])
            #expect(!context.hasChanges)
            context.redo()
            #expect(context.updatedObjects.map(\.objectID) == [mix])
            try context.save()
        }
        #expect(Self.stored(coordinator, mix, "tracks") == ["c", "a", "b"])
    }

    @Test func orderedToOnesAreRefusedAndTheJSONKeepsTheFlag() throws {
        #expect(throws: ModelError("relationship Track.playlist is ordered but to-one: only a to-many keeps an order")) {
            _ = try Model(entities: [
                Entity("Playlist", attributes: [], relationships: [Relationship("tracks", to: "Track", inverse: "playlist", toMany: true)]),
                Entity("Track", attributes: [], relationships: [Relationship("playlist", to: "Playlist", inverse: "tracks", ordered: true)]),
            ]).validated()
        }
        #expect(throws: ModelError("relationship Track.playlist_order: its column would be playlist's position column (playlist's inverse is ordered): rename it")) {
            _ = try Model(entities: [
                Entity("Playlist", attributes: [], relationships: [Relationship("tracks", to: "Track", inverse: "playlist", toMany: true, ordered: true),
                                                                   Relationship("others", to: "Track", inverse: "playlist_order", toMany: true)]),
                Entity("Track", attributes: [], relationships: [Relationship("playlist", to: "Playlist", inverse: "tracks"),
                                                                Relationship("playlist_order", to: "Playlist", inverse: "others")]),
            ]).validated()
        }
        let json = String(decoding: Self.model.jsonData(), as: UTF8.self)
        #expect(json.contains(#""name":"tracks","ordered":true"#))
        #expect(try Model.load(json: Self.model.jsonData()) == Self.model)
    }

    /// A playlist "mix" holding a, b, c (saved); returns the store, the playlist and the tracks by title.
    static func mix(on backend: StoreBackend) throws -> (PersistentStoreCoordinator, TemporaryDirectory, ObjectID, [String: ObjectID]) {
        let (coordinator, directory) = try TestModel.store(model, on: backend)
        let context = ObjectContext(coordinator: coordinator, name: "setup")
        let (mix, tracks) = try context.performAndWait {
            let mix = context.insert("Playlist"); mix.name = "mix"
            var tracks: [String: ManagedObject] = [:]
            for title in ["a", "b", "c"] {
                let track = context.insert("Track"); track.title = .string(title)
                mix.addObject(track, toKey: "tracks")
                tracks[title] = track
            }
            try context.save()
            return (mix.objectID, tracks.mapValues(\.objectID))   // permanent once saved
        }
        return (coordinator, directory, mix, tracks)
    }

    @Test(arguments: StoreBackend.available) func rollbackAndDeletesLeaveTheStoredOrder(backend: StoreBackend) throws {
        let (coordinator, directory, mix, _) = try Self.mix(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "editor")
        try context.performAndWait {
            let playlist = context.object(with: mix)
            let tracks = playlist.objects(forKey: "tracks")
            playlist.insertObject(tracks[2], at: 0, forKey: "tracks")
            let d = context.insert("Track"); d.title = "d"
            playlist.insertObject(d, at: 1, forKey: "tracks")
            #expect(Self.titles(playlist.objects(forKey: "tracks")) == ["c", "d", "a", "b"])
            context.rollback()
            #expect(Self.titles(playlist.objects(forKey: "tracks")) == ["a", "b", "c"])
            try context.save()
            // A deleted member leaves the order (nullify), in memory and in the store.
            context.delete(playlist.objects(forKey: "tracks")[1])
            try context.save()
            #expect(Self.titles(playlist.objects(forKey: "tracks")) == ["a", "c"])
        }
        #expect(Self.stored(coordinator, mix, "tracks") == ["a", "c"])
    }

    @Test(arguments: StoreBackend.available) func anUnsavedMoveSurvivesAMergeAndNewMembersFollowIt(backend: StoreBackend) throws {
        let (coordinator, directory, mix, tracks) = try Self.mix(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let editor = ObjectContext(coordinator: coordinator, name: "editor")
        let other = ObjectContext(coordinator: coordinator, name: "other")
        editor.performAndWait {
            let playlist = editor.object(with: mix)
            playlist.insertObject(editor.object(with: tracks["c"]!), at: 0, forKey: "tracks")
        }
        let notice = try other.performAndWait {
            let d = other.insert("Track"); d.title = "d"
            other.object(with: mix).insertObject(d, at: 0, forKey: "tracks")
            let saved = Mutex<SaveNotice?>(nil)
            let token = coordinator.addSaveObserver { notice in saved.withLock { $0 = notice } }
            try other.save()
            coordinator.removeSaveObserver(token)
            return try #require(saved.withLock { $0 })
        }
        #expect(Self.stored(coordinator, mix, "tracks") == ["d", "a", "b", "c"])
        // Saved without reading the relationship first: the save takes the merged order.
        try editor.performAndWait {
            editor.mergeChanges(fromDidSave: notice)
            try editor.save()
            #expect(Self.titles(editor.object(with: mix).objects(forKey: "tracks")) == ["c", "a", "b", "d"])
        }
        #expect(Self.stored(coordinator, mix, "tracks") == ["c", "a", "b", "d"])
    }

    @Test(arguments: StoreBackend.available) func permanentIDsAndAnOwnerMergedByUniquenessKeepTheOrder(backend: StoreBackend) throws {
        let (coordinator, directory, mix, _) = try Self.mix(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "importer")
        context.mergePolicy = .objectTrump
        try context.performAndWait {
            // A new "mix" (the stored one's key) with one track: merged onto the stored row, its
            // track follows the stored ones.
            let again = context.insert("Playlist"); again.name = "mix"
            let e = context.insert("Track"); e.title = "e"
            let f = context.insert("Track"); f.title = "f"
            again.addObject(e, toKey: "tracks")
            try context.obtainPermanentIDs(for: [again, e, f])
            again.insertObject(f, at: 0, forKey: "tracks")
            #expect(Self.titles(again.objects(forKey: "tracks")) == ["f", "e"])
            try context.save()
        }
        #expect(Self.stored(coordinator, mix, "tracks") == ["a", "b", "c", "f", "e"])
    }
}
