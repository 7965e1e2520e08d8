package import Foundation
import Synchronization

/// Callbacks registered under a token, called with every event, and the same events as an
/// `AsyncStream`: what the coordinator's save notices and an import's progress both offer.
package final class ObserverRegistry<Event: Sendable>: Sendable {
    private let callbacks = Mutex<[UUID: @Sendable (Event) -> Void]>([:])

    package init() {}

    /// Registers `callback`; the token removes it.
    package func add(_ callback: @escaping @Sendable (Event) -> Void) -> UUID {
        let token = UUID()
        callbacks.withLock { $0[token] = callback }
        return token
    }

    package func remove(_ token: UUID) {
        _ = callbacks.withLock { $0.removeValue(forKey: token) }
    }

    package var isEmpty: Bool { callbacks.withLock { $0.isEmpty } }

    /// Calls every callback with `event`, outside the lock (a callback may add or remove one).
    package func post(_ event: Event) {
        for callback in callbacks.withLock({ Array($0.values) }) { callback(event) }
    }

    /// The events from now on; the stream finishes after an event `isLast` says is the
    /// last, and unregisters itself when the task reading it is cancelled.
    package func stream(finishingAfter isLast: @escaping @Sendable (Event) -> Bool = { _ in false }) -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream()
        let token = add { event in
            continuation.yield(event)
            if isLast(event) { continuation.finish() }
        }
        continuation.onTermination = { [weak self] _ in self?.remove(token) }
        return stream
    }
}
