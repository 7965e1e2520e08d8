import Synchronization
import IngestTestSupport
import Foundation
import Testing
@testable import IngestStore

/// Misuse traps, and a save killed mid-transaction leaves the store as it was.
@Suite struct CrashTests {
    @Test func usingAContextOffItsQueueTraps() async throws {
        // Made here: the child traps, so a directory of its own would never be removed.
        let directory = try TemporaryDirectory()
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [store = directory.file("s.sqlite") as String] in
            let coordinator = try PersistentStoreCoordinator(model: TestModel.model, path: store)
            let context = ObjectContext(coordinator: coordinator, name: "worker-7")
            _ = context.insert("Photo")  // not inside perform
        }.map { result in
            let text = String(decoding: result.standardErrorContent, as: UTF8.self)
            #expect(text.contains("ObjectContext 'worker-7' used off its queue (insert(_:)): wrap the call in worker-7.performAndWait { }"))
        }
    }

    /// A trap's message is what a user reads, in the builds users ship: `precondition` and
    /// `preconditionFailure` print theirs only at -Onone (at -O the process says "precondition
    /// failure" and nothing else, found running this suite optimised), so every trap in the
    /// sources and in the code `ingest codegen` writes is a `fatalError`.
    @Test func everyTrapKeepsItsMessageInAnOptimisedBuild() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let sources = root.appendingPathComponent("Sources")
        var found: [String] = []
        let files = FileManager.default.enumerator(atPath: sources.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
        #expect(files.count > 100, "the sources were found")
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains("precondition(") || line.contains("preconditionFailure(") {
                found.append("\(file):\(number + 1)")
            }
        }
        #expect(found.isEmpty, "traps whose message an optimised build drops: \(found)")
    }

    @Test func usingAnObjectOffItsQueueTraps() async throws {
        // Made here: the child traps, so a directory of its own would never be removed.
        let directory = try TemporaryDirectory()
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [store = directory.file("s.sqlite") as String] in
            let coordinator = try PersistentStoreCoordinator(model: TestModel.model, path: store)
            let context = ObjectContext(coordinator: coordinator, name: "importer")
            let photo = context.performAndWait { context.insert("Photo") }
            _ = photo.title  // read outside perform
        }.map { result in
            let text = String(decoding: result.standardErrorContent, as: UTF8.self)
            #expect(text.contains("ObjectContext 'importer' used off its queue"))
        }
    }

    @Test(arguments: StoreBackend.reopenable) func aSaveKilledMidTransactionLeavesTheStoreAsBefore(backend: StoreBackend) async throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        // The store's file, or its PostgreSQL URL.
        let path = backend == .sqlite ? directory.file("store.sqlite") : coordinator.path
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            for i in 0..<100 { insertPhoto(context, id: "before-\(i)") }
            try context.setMetadata("before", forKey: "marker")
            try context.save()
        }
        await #expect(processExitsWith: .signal(SIGKILL)) { [path = path as String] in
            let coordinator = try PersistentStoreCoordinator(existingStoreAt: path)
            coordinator.beforeCommit.withLock { $0 = { kill(getpid(), SIGKILL) } }
            let context = ObjectContext(coordinator: coordinator)
            try context.performAndWait {
                for i in 0..<5_000 { insertPhoto(context, id: "during-\(i)") }
                let old = try context.fetch("Photo", where: "id", equals: "before-0")
                old.first?.title = "changed"
                try context.setMetadata("during", forKey: "marker")
                try context.save()
            }
        }
        let reopened = try PersistentStoreCoordinator(existingStoreAt: path)
        #expect(try reopened.count("Photo") == 100)
        #expect(try reopened.metadata(forKey: "marker", as: String.self) == "before")
        let reader = ObjectContext(coordinator: reopened)
        let title = try reader.performAndWait { try reader.fetch("Photo", where: "id", equals: "before-0").first?.title }
        #expect(title == nil)
    }
}

/// An object kept across `reset()`: its context no longer tracks it, so a change to it
/// could never be saved. The change traps, naming the object, never silently dropped.
@Suite struct ResetObjectTests {
    @Test func changingAnObjectKeptAcrossResetTrapsNamingIt() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let coordinator = try PersistentStoreCoordinator(inMemory: TestModel.model)
            let context = ObjectContext(coordinator: coordinator, name: "editor")
            try context.performAndWait {
                insertPhoto(context, id: "p1", title: "Harbour")
                try context.save()
                let photo = try context.fetch("Photo")[0]
                context.reset()
                photo.title = "Pier"
                try context.save()
            }
        }.map { result in
            let text = String(decoding: result.standardErrorContent, as: UTF8.self)
            #expect(text.contains("was changed (setValue(_:forAttributeAt:)) after ObjectContext 'editor' dropped it in reset(): the change could never be saved; fetch the object again"), "\(text)")
        }
    }

    @Test func relatingAnObjectKeptAcrossResetTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let coordinator = try PersistentStoreCoordinator(inMemory: TestModel.model)
            let context = ObjectContext(coordinator: coordinator, name: "editor")
            context.performAndWait {
                let kept = insertPhoto(context, id: "p1")
                context.reset()
                let ana = context.insert("Photographer")
                ana.id = "ana"
                kept.setObject(ana, forKey: "whoTook")
            }
        }.map { result in
            let text = String(decoding: result.standardErrorContent, as: UTF8.self)
            #expect(text.contains("after ObjectContext 'editor' dropped it in reset()"), "\(text)")
        }
    }

    /// Reading an object kept across a reset still works, and the same object fetched again
    /// takes the change and saves it.
    @Test(arguments: StoreBackend.available) func anObjectFetchedAgainAfterResetSavesItsChange(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "editor")
        try context.performAndWait {
            insertPhoto(context, id: "p1", title: "Harbour")
            try context.save()
            let kept = try context.fetch("Photo")[0]
            context.reset()
            #expect(kept.title == "Harbour")
            let again = context.object(with: kept.objectID)
            again.title = "Pier"
            try context.save()
        }
        let reader = ObjectContext(coordinator: coordinator)
        #expect(try reader.performAndWait { try reader.fetch("Photo").map { $0.title } } == ["Pier"])
    }
}
