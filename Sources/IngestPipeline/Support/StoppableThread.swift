import Dispatch
import Foundation
import Synchronization

/// A thread of its own that runs until asked to stop: what a PostgreSQL process's heartbeat
/// and the command line's PostgreSQL progress line share. `body` runs on the thread and
/// polls the function it is given, which turns true once `stop` is called.
package final class StoppableThread: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    package init(_ body: @escaping @Sendable (_ isStopped: @Sendable () -> Bool) -> Void) {
        Thread.detachNewThread { [self] in
            defer { done.signal() }
            body { [self] in stopped.load(ordering: .relaxed) }
        }
    }

    /// Asks the thread to stop and waits for it, at most `timeout` seconds when given (a
    /// thread stuck on a dead network must not keep the process from ending).
    package func stop(waitingAtMost timeout: Double? = nil) {
        stopped.store(true, ordering: .relaxed)
        if let timeout { _ = done.wait(timeout: .now() + timeout) } else { done.wait() }
    }
}
