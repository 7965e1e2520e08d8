import Dispatch
import Foundation
import Synchronization

/// A thread with a lifecycle: made idle, started once, asked to stop, joined with a
/// timeout. Every long-lived thread of Ingest is one (workers, the split, heartbeats,
/// uploads, the history stream, progress lines), so a stop reaches each the same way and
/// nothing is started by an initializer. The body gets the thread's `ThreadStop`: it
/// checks it in its loop and waits on it instead of sleeping, so a stop ends the wait at
/// once instead of after the sleep.
package final class ManagedThread: Sendable {
    package let name: String
    package let stopRequest = ThreadStop()
    private let started = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    package init(name: String) {
        self.name = name
    }

    /// Runs `body` on a new thread. A thread starts once: a second start is a programming
    /// error (it traps, naming the thread).
    package func start(_ body: @escaping @Sendable (ThreadStop) -> Void) {
        let (exchanged, _) = started.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing)
        guard exchanged else { fatalError("thread '\(name)' was started twice") }
        let thread = Thread { [self] in
            defer { done.signal() }
            body(stopRequest)
        }
        thread.name = name
        thread.start()
    }

    /// Asks the thread to stop (its `ThreadStop` waits end at once) and joins it.
    /// Returns false when it had not ended after `timeout` seconds (a thread stuck on a
    /// dead network must not keep the process from ending).
    @discardableResult
    package func stop(waitingAtMost timeout: Double? = nil) -> Bool {
        stopRequest.request()
        return join(waitingAtMost: timeout)
    }

    /// Waits for the body to return, at most `timeout` seconds when given; true once it has
    /// (or when the thread was never started). Any number of joins may wait.
    @discardableResult
    package func join(waitingAtMost timeout: Double? = nil) -> Bool {
        guard started.load(ordering: .acquiring) else { return true }
        if let timeout {
            // Dispatch's timed wait can end a fraction of a millisecond before its deadline by
            // the monotonic clock (seen: 199.2 ms of 200): what is left is waited again, so that
            // a join gives up only once `timeout` has passed.
            // Clamped: a Duration of more than about 1e20 seconds (or infinity) traps.
            let deadline = ContinuousClock.now + .seconds(min(max(0, timeout), 1e9))
            while done.wait(timeout: .now() + max(0, (deadline - ContinuousClock.now) / .seconds(1))) != .success {
                if ContinuousClock.now >= deadline { return false }
            }
        } else {
            done.wait()
        }
        // Passed on, so that the next join returns too.
        done.signal()
        return true
    }
}

/// A thread's stop request: checked in loops, and waited on instead of sleeping.
package final class ThreadStop: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)

    package init() {}

    package var isStopped: Bool { stopped.load(ordering: .acquiring) }

    /// Asks to stop; every wait, current or later, ends at once.
    package func request() {
        stopped.store(true, ordering: .releasing)
        wake.signal()
    }

    /// Waits `seconds`, or less when a stop is asked; true when stopped.
    @discardableResult
    package func wait(seconds: Double) -> Bool {
        if isStopped { return true }
        if wake.wait(timeout: .now() + max(0, seconds)) == .success {
            // Passed on to the next waiter: a stop is for good.
            wake.signal()
            return true
        }
        return isStopped
    }
}
