import Synchronization
import IngestTestSupport
import Foundation
import Testing
@testable import IngestStore

/// Misuse traps, and a save killed mid-transaction leaves the store as it was.
@Suite struct CrashTests {
    @Test func usingAContextOffItsQueueTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let directory = try TemporaryDirectory()
            let coordinator = try PersistentStoreCoordinator(model: TestModel.model, path: directory.file("s.sqlite"))
            let context = ObjectContext(coordinator: coordinator, name: "worker-7")
            _ = context.insert("Photo")  // not inside perform
        }.map { result in
            let text = String(decoding: result.standardErrorContent, as: UTF8.self)
            #expect(text.contains("ObjectContext 'worker-7' used off its queue (insert(_:)): wrap the call in worker-7.perform { }"))
        }
    }

    @Test func usingAnObjectOffItsQueueTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let directory = try TemporaryDirectory()
            let coordinator = try PersistentStoreCoordinator(model: TestModel.model, path: directory.file("s.sqlite"))
            let context = ObjectContext(coordinator: coordinator, name: "importer")
            let photo = context.perform { context.insert("Photo") }
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
        try context.perform {
            for i in 0..<100 { insertPhoto(context, id: "before-\(i)") }
            try context.setMetadata("before", forKey: "marker")
            try context.save()
        }
        await #expect(processExitsWith: .signal(SIGKILL)) { [path = path as String] in
            let coordinator = try PersistentStoreCoordinator(existingStoreAt: path)
            coordinator.beforeCommit.withLock { $0 = { kill(getpid(), SIGKILL) } }
            let context = ObjectContext(coordinator: coordinator)
            try context.perform {
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
        let title = try reader.perform { try reader.fetch("Photo", where: "id", equals: "before-0").first?.title }
        #expect(title == nil)
    }
}
