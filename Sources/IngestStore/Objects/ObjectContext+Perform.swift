import Dispatch

// Running code on a context's queue, with Core Data's names: `performAndWait` waits for
// the block, `perform` does not (async, or fire-and-forget).
extension ObjectContext {
    /// Runs `body` on the context's queue and waits for it (at once when already there,
    /// so calls nest); returns what it returns.
    /// - Throws: what `body` throws.
    public func performAndWait<T>(_ body: () throws -> T) rethrows -> T {
        if isOnQueue {
            // A main context's block runs inline: the outermost one still ends an undo group,
            // and tells what changed (a main context has no block of its own that would).
            performDepth += 1
            defer {
                performDepth -= 1
                if performDepth == 0 {
                    if kind == .main { processPendingChanges() } else { undoManager?.closeGroup() }
                }
            }
            return try body()
        }
        // A caller on the main queue waits for the block: the block may use main contexts.
        let lent = QueueConfinement.isOnMainQueue || QueueConfinement.holdsMainQueue
        return try queue.sync {
            try QueueConfinement.holdingMainQueue(lent) {
                enter()
                defer { leave() }
                return try body()
            }
        }
    }

    /// Runs `body` on the context's queue without blocking the caller, and returns what it
    /// returns. The context is handed to `body`, which must not let it or its objects escape.
    /// A `body` that throws nothing needs no `try`.
    /// - Throws: what `body` throws.
    public func perform<T: Sendable, Failure: Error>(
        _ body: @escaping @Sendable (ObjectContext) throws(Failure) -> T
    ) async throws(Failure) -> T {
        nonisolated(unsafe) let context = self
        let result: Result<T, Failure> = await withCheckedContinuation { continuation in
            queue.async {
                context.enter()
                defer { context.leave() }
                continuation.resume(returning: Result { () throws(Failure) -> T in try body(context) })
            }
        }
        return try result.get()
    }

    /// Schedules `block` on the context's queue and returns at once, as Core Data's
    /// `perform(_:)` does; the context is handed to `block`, which must not let it or its
    /// objects escape. Blocks run in the order they were scheduled, after any already
    /// queued (also when called from the queue itself). In async code the compiler picks
    /// the async `perform` instead (and asks for `await`), as it does for Core Data's.
    public func perform(_ block: @escaping @Sendable (ObjectContext) -> Void) {
        nonisolated(unsafe) let context = self
        queue.async {
            context.enter()
            defer { context.leave() }
            block(context)
        }
    }

    /// The synchronous `perform` of earlier versions.
    @available(*, deprecated, renamed: "performAndWait(_:)", message: "perform is asynchronous, as in Core Data; performAndWait waits")
    public func perform<T>(_ body: () throws -> T) rethrows -> T {
        try performAndWait(body)
    }

    /// Runs `body` as a perform block would, for code already running on the queue
    /// (a block the context itself scheduled there).
    func runOnQueue(_ body: () -> Void) {
        enter()
        defer { leave() }
        body()
    }

    private func enter() { confinement.enter() }

    private func leave() {
        processPendingChanges()
        confinement.leave()
    }

    private var isOnQueue: Bool { confinement.isCurrent }

    /// Traps unless called from inside one of this context's perform blocks.
    @inline(__always)
    func checkAccess(_ function: StaticString = #function) {
        confinement.check(function)
    }
}
