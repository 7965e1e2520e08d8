import Synchronization
import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// Many contexts on many queues at once; the final store is checked exactly.
@Suite struct ConcurrencyTests {
    /// Counts what the main context hears from merges; touched on the main queue only.
    @MainActor final class MergeLog {
        var insertedTotal = 0
        var inserted = Set<ObjectID>()
        var notices = 0
    }

    /// Eight contexts each save 20 batches at once while the main context merges every save:
    /// 160 saves, every object merged once. Batches of 500 with `INGEST_STRESS`, 125 without
    /// (the same saves and merges, a quarter of the rows).
    @Test(arguments: StoreBackend.available) func eightWorkersAndAnAutoMergingMainContext(backend: StoreBackend) async throws {
        let batchSize = Stress.count(500, quick: 125)
        let total = 8 * 20 * batchSize
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let log = await MainActor.run { MergeLog() }
        let main = await MainActor.run {
            let main = ObjectContext(.main, coordinator: coordinator, name: "main")
            main.automaticallyMergesChangesFromCoordinator = true
            main.onObjectsDidChange = { change in
                MainActor.assumeIsolated {
                    log.insertedTotal += change.inserted.count
                    log.inserted.formUnion(change.inserted)
                    log.notices += 1
                }
            }
            return UncheckedBox(main)
        }
        let sequences = try await withThrowingTaskGroup(of: [Int].self) { group in
            for worker in 0..<8 {
                group.addTask {
                    let context = ObjectContext(coordinator: coordinator, name: "worker-\(worker)")
                    return try await context.perform { context in
                        var sequences: [Int] = []
                        for batch in 0..<20 {
                            for i in 0..<batchSize {
                                let photo = context.insert("Photo")
                                photo.id = .string("w\(worker)-\(batch * batchSize + i)")
                                photo.views = .int(Int64(i))
                            }
                            try context.save()
                            #expect(context.registeredObjectCount == batchSize)
                            context.reset()
                            #expect(context.registeredObjectCount == 0)
                            sequences.append(batch)
                        }
                        return sequences
                    }
                }
            }
            var all: [[Int]] = []
            for try await result in group { all.append(result) }
            return all
        }
        #expect(sequences.count == 8 && sequences.allSatisfy { $0.count == 20 })
        // The main queue runs the merges in order; a block queued after them sees them all.
        let (fetched, merged, unique, notices) = try await MainActor.run {
            try main.value.performAndWait {
                (try main.value.fetch("Photo").count, log.insertedTotal, log.inserted.count, log.notices)
            }
        }
        #expect(merged == total)
        #expect(unique == total)
        #expect(notices == 160)
        #expect(fetched == total)
        #expect(try coordinator.count("Photo") == total)
        let reader = ObjectContext(coordinator: coordinator)
        try reader.performAndWait {
            let photos = try reader.fetch("Photo")
            #expect(Set(photos.map(\.objectID)).count == total)
            #expect(Set(photos.compactMap { $0.id?.stringValue }).count == total)
        }
    }

    @Test(arguments: StoreBackend.available) func saveNoticesArriveAsAnAsyncSequenceInOrder(backend: StoreBackend) async throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let notices = coordinator.saveNotices()
        let context = ObjectContext(coordinator: coordinator, name: "writer")
        try await context.perform { context in
            for i in 0..<3 {
                insertPhoto(context, id: "p\(i)")
                try context.save()
            }
        }
        var seen: [SaveNotice] = []
        for await notice in notices {
            seen.append(notice)
            if seen.count == 3 { break }
        }
        #expect(seen.map(\.sequence) == [1, 2, 3])
        #expect(seen.allSatisfy { $0.inserted.count == 1 && $0.contextName == "writer" })
    }

    @Test(arguments: StoreBackend.available) func mergeRefreshesUpdatedObjectsAndDropsDeletedOnes(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let writer = ObjectContext(coordinator: coordinator, name: "writer")
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        let ids: [ObjectID] = try writer.performAndWait {
            let photos = [insertPhoto(writer, id: "a", title: "old"), insertPhoto(writer, id: "b", title: "old"),
                          insertPhoto(writer, id: "c", title: "old")]
            try writer.save()
            return photos.map(\.objectID)
        }
        let notice: SaveNotice = try {
            var captured: SaveNotice?
            let token = coordinator.addSaveObserver { _ in }
            defer { coordinator.removeSaveObserver(token) }
            try reader.performAndWait {
                let a = try reader.existingObject(with: ids[0])
                let b = try reader.existingObject(with: ids[1])
                b.views = 99
                _ = try reader.existingObject(with: ids[2]).title
                #expect(a.title == "old")
            }
            let stream = Mutex2<SaveNotice?>(nil)
            let observer = coordinator.addSaveObserver { stream.set($0) }
            try writer.performAndWait {
                try writer.existingObject(with: ids[0]).title = "new"
                try writer.existingObject(with: ids[1]).title = "new"
                writer.delete(try writer.existingObject(with: ids[2]))
                try writer.save()
            }
            coordinator.removeSaveObserver(observer)
            captured = stream.get()
            return try #require(captured)
        }()
        #expect(notice.updated == [ids[0], ids[1]])
        #expect(notice.deleted == [ids[2]])
        reader.performAndWait {
            var heard: ObjectsDidChange?
            reader.onObjectsDidChange = { heard = $0 }
            reader.mergeChanges(fromDidSave: notice)
            #expect(heard?.refreshed == [ids[0], ids[1]])
            #expect(heard?.deleted == [ids[2]])
            let a = reader.object(with: ids[0])
            #expect(a.isFault)
            #expect(a.title == "new")
            let b = reader.object(with: ids[1])
            #expect(b.title == "new")
            #expect(b.views == 99)
            #expect(reader.registeredObjectCount == 2)
        }
    }
}

/// Carries a main-actor-bound value across an await; used only on the main actor.
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// A tiny lock for a value shared with a save observer.
final class Mutex2<T>: @unchecked Sendable {
    private var value: T
    private let lock = NSLock()
    init(_ value: T) { self.value = value }
    func set(_ new: T) { lock.lock(); value = new; lock.unlock() }
    func get() -> T { lock.lock(); defer { lock.unlock() }; return value }
}

@Suite struct ReaderTests {
    /// WAL: a reader gets the last committed state at once while a save is mid-transaction.
    /// (Not in memory: SQLite in memory has no WAL, and its one connection serves reads
    /// between writes.)
    @Test(arguments: StoreBackend.reopenable) func readersDoNotWaitForAWriteInProgress(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let writer = ObjectContext(coordinator: coordinator, name: "writer")
        try writer.performAndWait {
            insertPhoto(writer, id: "committed")
            try writer.save()
        }
        let inTransaction = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        coordinator.beforeCommit.withLock { $0 = { inTransaction.signal(); release.wait() } }
        let done = DispatchSemaphore(value: 0)
        let result = Mutex2<Result<Void, any Error>?>(nil)
        DispatchQueue.global().async {
            // A context is not Sendable (the compiler refuses to send `writer` here):
            // the background writer makes its own.
            let background = ObjectContext(coordinator: coordinator, name: "background")
            result.set(Result { try background.performAndWait { insertPhoto(background, id: "pending"); try background.save() } })
            done.signal()
        }
        inTransaction.wait()
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        let clock = ContinuousClock()
        let start = clock.now
        let seen = try reader.performAndWait { try reader.fetch("Photo").compactMap { $0.id?.stringValue } }
        #expect(seen == ["committed"])
        #expect(clock.now - start < .seconds(5), "the read waited for the writer")
        coordinator.beforeCommit.withLock { $0 = nil }
        release.signal()
        done.wait()
        try result.get()?.get()
        #expect(try coordinator.count("Photo") == 2)
    }
}
