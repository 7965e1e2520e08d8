import Foundation
import IngestPipeline
import IngestStore
import IngestTestSupport

/// What a snippet of the documentation takes as given: the snippets are methods of a scene
/// (Snippets/*.swift, made by extract-snippets.sh), so a fragment's free names — `context`,
/// `editor`, `photo`, `model`, `spec`… — are these, made afresh for each test in a temporary
/// directory. Top-level code runs on the main actor, and so does a scene.
@MainActor struct DocScene {
    let directory: TemporaryDirectory
    /// DocModel.json: every entity a fragment names (Models.swift is its typed classes).
    let model: Model
    /// Pipelines/photos.json, whose feed the temporary directory holds as photos.json.
    let spec: PipelineSpec
    /// A SQLite store of `model` with a few objects (scene.sqlite).
    let coordinator: PersistentStoreCoordinator
    /// A main-queue context on `coordinator`, holding `playlist` and its tracks (unsaved).
    let context: ObjectContext
    /// Another main-queue context, with an undo manager, holding `photo` ("p1", "Harbour").
    let editor: ObjectContext
    let photo: ManagedObject
    let playlist: ManagedObject
    let intro: ManagedObject
    let outro: ManagedObject
    let single: ManagedObject
    /// A photographer's `id` in the store, and arguments for a predicate.
    let anaID = "ana"
    let since = Date(timeIntervalSinceReferenceDate: 0)
    let minViews = 10
    /// A history token consumers keep.
    let oldestTokenAnyConsumerStillHolds: HistoryToken
    private let postgres: PostgresDatabase?

    init(postgres usesPostgres: Bool = false) throws {
        directory = try TemporaryDirectory()
        let root = DocScene.packageRoot
        model = try Model.load(json: Data(contentsOf: URL(fileURLWithPath: root + "/Tests/DocSnippetTests/DocModel.json")), strict: true)
        spec = try PipelineSpec.load(path: root + "/Pipelines/photos.json")
        try FileManager.default.copyItem(atPath: root + "/Fixtures/feeds/photos-10.json", toPath: directory.file("photos.json"))
        postgres = usesPostgres ? try PostgresDatabase() : nil

        coordinator = try PersistentStoreCoordinator(model: model, path: directory.file("scene.sqlite"))
        let seed = ObjectContext(coordinator: coordinator, name: "seed")
        try seed.performAndWait {
            let ana = seed.insert("Photographer")
            ana.id = "ana"
            ana.name = "Ana"
            for (n, title) in ["Harbour", "Dock", "Pier"].enumerated() {
                let photo = seed.insert("Photo")
                photo.id = .string("p\(n + 1)")
                photo.title = .string(title)
                photo.views = .int(Int64(n * 100))
                photo.taken = .date(Date(timeIntervalSinceReferenceDate: Double(n) * 86_400))
                photo.setObject(ana, forKey: "whoTook")
            }
            let trips = seed.insert("Folder")
            trips.name = "trips"
            let album = seed.insert("Album")
            album.name = "Lisbon"
            album.setObject(trips, forKey: "folder")
            try seed.save()
        }
        oldestTokenAnyConsumerStillHolds = try coordinator.currentHistoryToken()

        let context = ObjectContext(.main, coordinator: coordinator, name: "context")
        (playlist, intro, outro, single) = context.performAndWait {
            let playlist = context.insert("Playlist")
            let tracks = ["Intro", "Outro", "Single"].map { title in
                let track = context.insert("Track")
                track.title = .string(title)
                return track
            }
            return (playlist, tracks[0], tracks[1], tracks[2])
        }
        let editor = ObjectContext(.main, coordinator: coordinator, name: "editor")
        photo = try editor.performAndWait {
            editor.undoManager = ContextUndoManager()
            return try editor.fetch(FetchRequest("Photo", predicate: try QueryPredicate(format: "id == %@", "p1")))[0]
        }
        (self.context, self.editor) = (context, editor)
    }

    /// A snippet's file name: in the package for Pipelines/ and Fixtures/, else in the
    /// test's temporary directory.
    func path(_ name: String) -> String {
        name.hasPrefix("Pipelines/") || name.hasPrefix("Fixtures/") ? DocScene.packageRoot + "/" + name : directory.file(name)
    }

    /// A snippet's PostgreSQL URL: a database of the test's own server.
    func postgresURL(_ url: String) -> String {
        guard let postgres else { preconditionFailure("\(url): a snippet that opens PostgreSQL needs the mark <!-- snippet: postgres -->") }
        return postgres.url
    }

    // What the history example calls: an app's own.
    func loadSavedToken() throws -> HistoryToken? { nil }
    func save(_ token: HistoryToken) throws {}
    func buildSearchIndex(_ coordinator: PersistentStoreCoordinator) throws -> SearchIndex { SearchIndex() }

    final class SearchIndex {
        func reload(_ id: ObjectID) {}
        func remove<Key>(_ id: ObjectID, key: Key) {}
    }

    nonisolated static let packageRoot: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
}

/// A database of its own on a throwaway server, one server for the process.
struct PostgresDatabase {
    let url: String
    private static let server = Result { () throws -> PostgresServer in
        let server = try PostgresServer()
        server.stopAtExit()
        return server
    }
    init() throws {
        url = try Self.server.get().createDatabase("doc_\(UUID().uuidString.prefix(8).lowercased())")
    }
}
