import Dispatch
import Synchronization

/// A bounded queue from one producer thread to one consumer thread: `push` waits while
/// `capacity` items wait unconsumed (so a fast mapper stays at most that far ahead of
/// its writer, and memory stays flat), `pop` waits for the next item and returns nil
/// once the queue is finished and empty. `cancel` drops what waits and wakes both.
final class Handoff<Item: Sendable>: Sendable {
    private struct State {
        var items: [Item] = []
        var finished = false
        var cancelled = false
    }

    private let state = Mutex(State())
    private let filled = DispatchSemaphore(value: 0)
    private let room: DispatchSemaphore

    init(capacity: Int) {
        // Made at 0 and signalled up: libdispatch traps when a semaphore made with a value
        // is freed below it, as a cancelled handoff's may be.
        room = DispatchSemaphore(value: 0)
        for _ in 0..<max(1, capacity) { room.signal() }
    }

    /// Hands `item` on, waiting for room; false once the queue was cancelled.
    @discardableResult
    func push(_ item: Item) -> Bool {
        room.wait()
        let accepted = state.withLock { state -> Bool in
            guard !state.cancelled else { return false }
            state.items.append(item)
            return true
        }
        if accepted { filled.signal() } else { room.signal() }
        return accepted
    }

    /// Waits until every item pushed was taken (or the queue was cancelled); false once cancelled.
    func waitUntilTaken() -> Bool {
        room.wait()
        room.signal()
        return !state.withLock { $0.cancelled }
    }

    /// The next item, or nil once the queue is finished (or cancelled) and empty.
    func pop() -> Item? {
        filled.wait()
        // At most `capacity` items wait: taking the first is cheap, and a consumed item
        // (a chunk's bytes, a request) is let go at once.
        let item = state.withLock { state -> Item? in
            state.items.isEmpty ? nil : state.items.removeFirst()
        }
        if item != nil { room.signal() } else { filled.signal() }
        return item
    }

    /// No more items: `pop` returns nil once the queue is drained.
    func finish() {
        let first = state.withLock { state -> Bool in
            defer { state.finished = true }
            return !state.finished
        }
        if first { filled.signal() }
    }

    /// Drops what waits and ends the queue: `push` returns false, `pop` nil.
    func cancel() {
        state.withLock { state in
            state.cancelled = true
            state.finished = true
            state.items.removeAll()
        }
        filled.signal()
        room.signal()
    }
}

/// A value handed to another thread that alone uses it until the handing thread waits
/// for it (a worker's writer stage): the compiler cannot see that confinement, this says it.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
