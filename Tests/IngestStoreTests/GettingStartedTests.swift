import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// The getting-started article's code (IngestStore.docc/GettingStarted.md), as written
/// there: it compiles and does what the article says.
@Suite struct GettingStartedTests {
    @Test func theArticlesCodeRuns() throws {
        let dir = try TemporaryDirectory()
        let model = Model(entities: [
            Entity("Photographer", attributes: [Attribute("id", .string, optional: false), Attribute("name", .string)],
                   relationships: [Relationship("photos", to: "Photo", inverse: "whoTook", toMany: true)],
                   uniquenessConstraints: [["id"]]),
            Entity("Photo", attributes: [Attribute("id", .string, optional: false), Attribute("views", .int64)],
                   relationships: [Relationship("whoTook", to: "Photographer", inverse: "photos")],
                   uniquenessConstraints: [["id"]]),
        ])
        let coordinator = try PersistentStoreCoordinator(model: model, path: dir.file("photos.sqlite"))

        let worker = ObjectContext(coordinator: coordinator, name: "worker")
        try worker.performAndWait {
            for n in 0..<10_000 {
                let photo = worker.insert("Photo")
                photo["id"] = .string("p\(n)")
                photo["views"] = .int(Int64(n))
                if n % 1_000 == 999 {
                    try worker.save()
                    worker.reset()
                }
            }
            try worker.save()
        }

        let main = ObjectContext(coordinator: coordinator, name: "main")
        main.performAndWait { main.automaticallyMergesChangesFromCoordinator = true }

        let minViews = 9_000
        let popular = FetchRequest("Photo", predicate: try QueryPredicate(format: "views > %d", minViews),
                                   sortDescriptors: [FetchSortDescriptor("views", ascending: false)], fetchLimit: 10)
        let ids = try main.performAndWait { try main.fetch(popular).map(\.objectID) }
        #expect(ids.count == 10)
        #expect(try coordinator.count("Photo") == 10_000)

        let byAna = try main.performAndWait {
            let ana = main.insert("Photographer")
            ana["id"] = "ana"
            let chosen = try main.fetch(FetchRequest("Photo", predicate: try QueryPredicate(format: "id IN %@", ["p1", "p2"])))
            for photo in chosen { photo.setObject(ana, forKey: "whoTook") }
            try main.save()
            return try main.count(for: FetchRequest("Photo", predicate: try QueryPredicate(format: "whoTook == %@", ana)))
        }
        #expect(byAna == 2)
    }
}

/// A SQLite failure reaches a Swift caller as a value with SQLite's result code.
@Suite struct StoreErrorCodeTests {
    @Test func aRefusedWriteCarriesSQLitesResultCode() throws {
        let dir = try TemporaryDirectory()
        let model = Model(entities: [Entity("Note", attributes: [Attribute("text", .string)])])
        let path = dir.file("notes.sqlite")
        let coordinator = try PersistentStoreCoordinator(model: model, path: path)
        // A trigger added behind the store's back refuses every insert, as a constraint would.
        try SQLiteFile(path).execute(#"CREATE TRIGGER refuse BEFORE INSERT ON "Note" BEGIN SELECT RAISE(ABORT, 'no notes'); END"#)
        let context = ObjectContext(coordinator: coordinator)
        let error = context.performAndWait {
            _ = context.insert("Note")
            return #expect(throws: StoreError.self) { try context.save() }
        }
        guard case .database(let message, let code)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(message.contains("no notes"))
        #expect(code?.primaryResultCode == .SQLITE_CONSTRAINT)
    }
}
