import Foundation
import IngestTestSupport
import Synchronization
import Testing
@testable import IngestStore

/// Transient attributes (Core Data's "Transient"): kept on managed objects only, never in
/// the store, undone like any change, forgotten when the object is refaulted.
@Suite struct TransientAttributeTests {
    /// Notes with a stored title and two transient attributes, one with a default.
    static let model = Model(entities: [
        Entity("Note", attributes: [
            Attribute("id", .string, optional: false),
            Attribute("draft", .string, transient: true),
            Attribute("title", .string),
            Attribute("score", .int64, default: .int(5), transient: true),
        ], uniquenessConstraints: [["id"]]),
    ])

    /// A store holding note n1 ("Saved"), and a context on it.
    static func setUp(_ backend: StoreBackend) throws -> (ObjectContext, PersistentStoreCoordinator, Any, ObjectID) {
        let (coordinator, directory) = try TestModel.store(model, on: backend)
        let context = ObjectContext(coordinator: coordinator, name: "notes")
        let id = try context.performAndWait {
            let note = context.insert("Note")
            note.id = "n1"
            note.title = "Saved"
            note.draft = "never stored"
            try context.save()
            return note.objectID
        }
        return (context, coordinator, directory, id)
    }

    @Test func theStoredFormLeavesTransientAttributesAndRulesOut() throws {
        let stored = Self.model.storedForm
        #expect(stored.entity("Note")!.attributes.map(\.name) == ["id", "title"])
        // A model without either is its own stored form: existing stores keep their hash.
        #expect(TestModel.model.storedForm == TestModel.model)
        #expect(TestModel.model.storedForm.hash == TestModel.model.hash)
    }

    @Test func modelJSONWritesTransientOnlyWhenSet() throws {
        let json = String(decoding: Self.model.jsonData(), as: UTF8.self)
        #expect(json.contains(#"{"indexed":false,"name":"draft","optional":true,"transient":true,"type":"string"}"#), "\(json)")
        #expect(json.contains(#"{"indexed":false,"name":"title","optional":true,"type":"string"}"#), "\(json)")
        #expect(try Model.load(json: Self.model.jsonData(), strict: true) == Self.model)
    }

    @Test(arguments: StoreBackend.available)
    func theStoreHasNoColumnAndASavedObjectComesBackWithTheDefault(backend: StoreBackend) throws {
        let (_, coordinator, directory, id) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let other = ObjectContext(coordinator: coordinator, name: "reader")
        try other.performAndWait {
            let note = try other.existingObject(with: id)
            #expect(note.title == "Saved")
            #expect(note.draft == nil)
            #expect(note.score == .int(5))
            let fetched = try other.fetch(FetchRequest("Note"))
            #expect(fetched.map { $0.title } == ["Saved"])
        }
        if backend == .sqlite {
            let columns = try SQLiteFile(coordinator.path, readOnly: true).strings("SELECT name FROM pragma_table_info('Note')")
            #expect(columns == ["_pk", "id", "title", "_placeholder"])
        }
    }

    @Test(arguments: StoreBackend.available)
    func aTransientIsSetAndReadAndForgottenWhenTheObjectIsRefreshed(backend: StoreBackend) throws {
        let (context, _, directory, id) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        context.performAndWait {
            let note = context.object(with: id)
            note.draft = "thinking"
            note.score = .int(9)
            #expect(note.draft == "thinking" && note.score == .int(9))
            context.refresh(note, mergeChanges: false)
            #expect(note.isFault)
            #expect(note.draft == nil)
            #expect(note.score == .int(5))
            #expect(note.title == "Saved")
        }
    }

    @Test(arguments: StoreBackend.available)
    func savingOnlyATransientChangeWritesNothing(backend: StoreBackend) throws {
        let (context, coordinator, directory, id) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let notices = Mutex(0)
        let token = coordinator.addSaveObserver { _ in notices.withLock { $0 += 1 } }
        defer { coordinator.removeSaveObserver(token) }
        let before = try coordinator.currentHistoryToken()
        try context.performAndWait {
            let note = context.object(with: id)
            note.draft = "only this"
            #expect(!context.hasChanges)
            #expect(!note.hasChanges)
            #expect(context.updatedObjects.isEmpty)
            try context.save()
            // The value stays on the object: the save did not touch it.
            #expect(note.draft == "only this")
        }
        #expect(notices.withLock { $0 } == 0)
        #expect(try coordinator.fetchHistory(after: before).transactions.isEmpty)
    }

    @Test(arguments: StoreBackend.available)
    func aSaveOfStoredChangesLeavesTransientValuesAsTheyAre(backend: StoreBackend) throws {
        let (context, coordinator, directory, id) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        try context.performAndWait {
            let note = context.object(with: id)
            note.draft = "kept"
            note.title = "Renamed"
            try context.save()
            #expect(note.draft == "kept" && note.title == "Renamed")
        }
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        try reader.performAndWait {
            let note = try reader.existingObject(with: id)
            #expect(note.title == "Renamed" && note.draft == nil)
        }
    }

    @Test(arguments: StoreBackend.available)
    func transientChangesAreUndoneAndRedone(backend: StoreBackend) throws {
        let (context, _, directory, id) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        context.performAndWait { context.undoManager = ContextUndoManager() }
        let note = context.performAndWait { context.object(with: id) }
        context.performAndWait { note.draft = "first" }
        context.performAndWait { note.draft = "second"; note.score = .int(1) }
        context.performAndWait {
            context.undo()
            #expect(note.draft == "first" && note.score == .int(5))
            // Back to what the object held before (the save kept it: the object stayed registered).
            context.undo()
            #expect(note.draft == "never stored")
            context.redo()
            #expect(note.draft == "first")
            context.redo()
            #expect(note.draft == "second" && note.score == .int(1))
            #expect(!context.hasChanges)
        }
    }

    @Test(arguments: StoreBackend.available)
    func fetchesCannotFilterOrSortOnATransientAttribute(backend: StoreBackend) throws {
        let (context, _, directory, _) = try Self.setUp(backend)
        defer { withExtendedLifetime(directory) {} }
        let message = "Note.draft is a transient attribute, which the store does not keep: a fetch cannot filter or sort on it (filter or sort the fetched objects instead)"
        context.performAndWait {
            #expect(throws: QueryPredicateError(message, column: 0)) {
                try context.fetch(FetchRequest("Note", predicate: try QueryPredicate(format: "draft == 'x'")))
            }
            #expect(throws: QueryPredicateError(message, column: 0)) {
                try context.fetch(FetchRequest("Note", sortDescriptors: [FetchSortDescriptor("draft")]))
            }
        }
    }

    @Test(arguments: StoreBackend.reopenable)
    func addingATransientAttributeNeedsNoMigration(backend: StoreBackend) throws {
        let plain = Model(entities: [Entity("Note", attributes: [
            Attribute("id", .string, optional: false), Attribute("title", .string),
        ], uniquenessConstraints: [["id"]])])
        let directory = try TemporaryDirectory()
        let url = backend == .postgres ? URL(string: try StoreBackend.newDatabase())! : URL(fileURLWithPath: directory.file("store.sqlite"))
        let coordinator = try PersistentStoreCoordinator(model: plain, url: url)
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let note = context.insert("Note")
            note.id = "n1"
            try context.save()
        }
        let reopened = try PersistentStoreCoordinator(model: Self.model, url: url)
        let again = ObjectContext(coordinator: reopened)
        try again.performAndWait {
            let notes = try again.fetch(FetchRequest("Note"))
            #expect(notes.count == 1 && notes[0].score == .int(5))
        }
        withExtendedLifetime(directory) {}
    }

    @Test func aTransientAttributeCannotBeIndexedOrUnique() throws {
        let indexed = Model(entities: [Entity("Note", attributes: [Attribute("draft", .string, indexed: true, transient: true)])])
        #expect(throws: ModelError("attribute Note.draft is transient and indexed: a transient attribute has no column to index")) {
            try indexed.validated()
        }
        let unique = Model(entities: [Entity("Note", attributes: [Attribute("draft", .string, transient: true)], uniquenessConstraints: [["draft"]])])
        #expect(throws: ModelError("uniqueness constraint on Note names the transient attribute 'draft', which the store does not keep")) {
            try unique.validated()
        }
    }
}
