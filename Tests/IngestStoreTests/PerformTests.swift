import Dispatch
import Foundation
import Testing
@testable import IngestStore

/// Core Data's names: `performAndWait` waits and returns, `perform` does not wait (async,
/// or fire-and-forget).
@Suite struct PerformTests {
    struct Refused: Error, Equatable {}

    @Test func performAndWaitReturnsTheBlocksValueAndRethrows() throws {
        let (coordinator, directory) = try TestModel.store()
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "waiting")
        // Non-throwing block: no `try`.
        let answer = context.performAndWait { 42 }
        #expect(answer == 42)
        // Nested calls run inline on the queue.
        let nested = context.performAndWait { _ = context.performAndWait { insertPhoto(context, id: "p1") }; return context.insertedObjects.count }
        #expect(nested == 1)
        #expect(throws: Refused()) { try context.performAndWait { () throws -> Int in throw Refused() } }
        #expect(throws: StoreError.unknownEntity("Nope")) { try context.performAndWait { try context.fetch("Nope") } }
    }

    @Test func asyncPerformRethrowsWhatItsBlockThrows() async throws {
        let (coordinator, directory) = try TestModel.store()
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "async")
        // Non-throwing block: no `try`, and it runs on the context's queue (insert checks).
        let count = await context.perform { context in
            insertPhoto(context, id: "p1")
            return context.insertedObjects.count
        }
        #expect(count == 1)
        // A block throwing one type throws that type, matchable without a cast.
        do {
            try await context.perform { _ throws(Refused) in throw Refused() }
            Issue.record("the block's error was not thrown")
        } catch {
            #expect(error == Refused())
        }
        try await context.perform { context in try context.save() }
        #expect(try coordinator.count("Photo") == 1)
    }

    @Test func fireAndForgetPerformReturnsAtOnceAndRunsOnTheQueueInOrder() throws {
        let (coordinator, directory) = try TestModel.store()
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "fire-and-forget")
        let gate = DispatchSemaphore(value: 0)
        let order = Mutex2<[String]>([])
        context.perform { context in
            gate.wait()
            insertPhoto(context, id: "p1")  // traps off the context's queue
            order.set(order.get() + ["first"])
        }
        context.perform { context in
            do { try context.save() } catch { Issue.record("\(error)") }
            order.set(order.get() + ["second"])
        }
        // Both blocks wait behind the gate: perform returned without running them.
        #expect(order.get() == [])
        gate.signal()
        let (ids, hasChanges) = try context.performAndWait {
            (try context.fetch("Photo").compactMap { $0.id?.stringValue }, context.hasChanges)
        }
        #expect(order.get() == ["first", "second"])
        #expect(ids == ["p1"])
        #expect(hasChanges == false)
        #expect(try coordinator.count("Photo") == 1)
        // Scheduled from the queue itself, a block runs after the current one ends.
        context.performAndWait {
            context.perform { _ in order.set(order.get() + ["scheduled"]) }
            order.set(order.get() + ["current"])
        }
        context.performAndWait {}
        #expect(order.get() == ["first", "second", "current", "scheduled"])
    }
}
