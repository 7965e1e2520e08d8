import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// Ordered to-many relationships (Core Data's `NSOrderedSet`): a playlist's tracks (one
/// to many) and a track's tags (many to many) keep the order they were put in, through
/// saves, reads in other contexts, moves, removals and undo.
@Suite struct OrderedRelationshipTests {
    static let model = Model(entities: [
        Entity("Playlist", attributes: [Attribute("name", .string)],
               relationships: [Relationship("tracks", to: "Track", inverse: "playlist", toMany: true, ordered: true)]),
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
        return reader.perform { titles(reader.object(with: id).objects(forKey: key)) }
    }

    @Test(arguments: StoreBackend.available) func aOneToManyKeepsItsOrderThroughInsertsMovesAndRemovals(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(Self.model, on: backend)
        _ = directory
        let context = ObjectContext(coordinator: coordinator, name: "editor")
        let (mix, other, tracks) = try context.perform {
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
        try context.perform {
            context.reset()
            let playlist = context.object(with: mix)
            playlist.insertObject(context.object(with: tracks[2]), at: 0, forKey: "tracks")   // a move
            playlist.removeObject(context.object(with: tracks[0]), fromKey: "tracks")
            try context.save()
        }
        #expect(Self.stored(coordinator, mix, "tracks") == ["t3", "t4", "t2"])
        try context.perform {
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
        _ = directory
        let context = ObjectContext(coordinator: coordinator, name: "editor")
        let (track, rock) = try context.perform {
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
        try context.perform {
            context.reset()
            let song = context.object(with: track)
            song.insertObject(context.object(with: rock), at: 5, forKey: "tags")   // past the end: last
            try context.save()
        }
        #expect(Self.stored(coordinator, track, "tags") == ["jazz", "pop", "rock"])
    }

    @Test(arguments: StoreBackend.available) func undoPutsAMovedMemberBack(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(Self.model, on: backend)
        _ = directory
        let context = ObjectContext(coordinator: coordinator, name: "editor")
        let mix = try context.perform {
            let mix = context.insert("Playlist")
            for title in ["a", "b", "c"] {
                let track = context.insert("Track"); track.title = .string(title)
                mix.addObject(track, toKey: "tracks")
            }
            try context.save()
            return mix.objectID
        }
        context.perform { context.undoManager = ContextUndoManager() }
        let playlist = context.perform { context.object(with: mix) }
        context.perform {
            let c = playlist.objects(forKey: "tracks")[2]
            playlist.insertObject(c, at: 0, forKey: "tracks")
        }
        try context.perform {
            #expect(Self.titles(playlist.objects(forKey: "tracks")) == ["c", "a", "b"])
            context.undo()
            #expect(Self.titles(playlist.objects(forKey: "tracks")) == ["a", "b", "c"])
            context.redo()
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
        let json = String(decoding: Self.model.jsonData(), as: UTF8.self)
        #expect(json.contains(#""name":"tracks","ordered":true"#))
        #expect(try Model.load(json: Self.model.jsonData()) == Self.model)
    }
}
