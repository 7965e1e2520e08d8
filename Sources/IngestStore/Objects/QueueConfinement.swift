import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Which thread may use a context and its objects right now, and the trap for any other.
///
/// Shared by a context and each of its objects, so an object checks its confinement
/// without going through its (unowned) context on every property access.
final class QueueConfinement: Sendable {
    let name: String
    let isMain: Bool
    /// The thread running one of the context's `perform` blocks, or 0.
    private let activeThread = Atomic<UInt>(0)
    /// The context's `tracksObjectChanges`, where its objects read it on every change
    /// without going through their unowned context. Set and read on the context's queue only.
    nonisolated(unsafe) var tracksObjectChanges = false

    init(name: String, isMain: Bool) {
        self.name = name
        self.isMain = isMain
    }

    func enter() {
        if !isMain { activeThread.store(UInt(pthread_self()), ordering: .relaxed) }
    }

    func leave() {
        if !isMain { activeThread.store(0, ordering: .relaxed) }
    }

    var isCurrent: Bool {
        isMain ? Self.isOnMainQueue || Self.holdsMainQueue : activeThread.load(ordering: .relaxed) == UInt(pthread_self())
    }

    /// Traps unless called from inside one of the context's `perform` blocks.
    @inline(__always)
    func check(_ function: StaticString = #function) {
        guard isCurrent else { offQueue(function) }
    }

    private func offQueue(_ function: StaticString) -> Never {
        fatalError("ObjectContext '\(name)' used off its queue (\(function)): wrap the call in \(name).performAndWait { }")
    }

    // MARK: - The main queue

    /// On Linux, once the main queue runs under dispatch_main(), its blocks run on
    /// worker threads: "on the main queue" is a queue-specific value, not a thread.
    private static let mainQueueKey = DispatchSpecificKey<Bool>()
    private static let mainQueueMarked = Mutex(false)

    static func markMainQueue() {
        mainQueueMarked.withLock { marked in
            guard !marked else { return }
            DispatchQueue.main.setSpecific(key: mainQueueKey, value: true)
            marked = true
        }
    }

    static var isOnMainQueue: Bool { DispatchQueue.getSpecific(key: mainQueueKey) == true }

    // MARK: - Lending the main queue

    /// Set on a thread running a block that a caller on the main queue waits for (a child
    /// context's `performAndWait` called from the main queue): the main queue runs nothing
    /// else until the block ends, so the block may use a main context (its parent, say).
    /// Without this, the parent's `performAndWait` would wait for the main queue, which
    /// waits for the block: a deadlock.
    private static let mainQueueLoan: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static var holdsMainQueue: Bool { pthread_getspecific(mainQueueLoan) != nil }

    /// Runs `body` holding the main queue when `lent` (the caller is on it, and waits).
    static func holdingMainQueue<T>(_ lent: Bool, _ body: () throws -> T) rethrows -> T {
        guard lent else { return try body() }
        let before = pthread_getspecific(mainQueueLoan)
        pthread_setspecific(mainQueueLoan, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(mainQueueLoan, before) }
        return try body()
    }
}
