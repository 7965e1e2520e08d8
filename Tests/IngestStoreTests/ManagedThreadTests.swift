import Foundation
import Synchronization
import Testing
@testable import IngestStore

/// The one thread helper: started explicitly, stopped through waits that end at once,
/// joined with a timeout.
@Suite struct ManagedThreadTests {
    @Test func aStopEndsTheThreadsWaitAtOnceAndTheJoinReturns() {
        let thread = ManagedThread(name: "test.waiting")
        let waits = Atomic(0)
        thread.start { stop in
            // Would take an hour a wait if the stop did not end it.
            while !stop.wait(seconds: 3_600) { waits.add(1, ordering: .relaxed) }
        }
        let asked = ContinuousClock.now
        #expect(thread.stop(waitingAtMost: 10))
        #expect(ContinuousClock.now - asked < .seconds(5))
        let woken = waits.load(ordering: .relaxed)
        #expect(woken == 0)
        // Any number of joins return once it has ended.
        #expect(thread.join(waitingAtMost: 0))
        #expect(thread.join())
    }

    @Test func aThreadThatDoesNotStopIsGivenUpAfterTheTimeout() {
        let thread = ManagedThread(name: "test.stuck")
        let release = DispatchSemaphore(value: 0)
        // A thread stuck on something other than its stop (a dead network, say).
        thread.start { _ in release.wait() }
        let asked = ContinuousClock.now
        #expect(thread.stop(waitingAtMost: 0.2) == false)
        #expect(ContinuousClock.now - asked >= .milliseconds(200))
        release.signal()
        #expect(thread.join(waitingAtMost: 10))
    }

    @Test func nothingRunsBeforeStartAndAJoinOfAThreadNeverStartedReturns() {
        let ran = Atomic(false)
        let thread = ManagedThread(name: "test.idle")
        Thread.sleep(forTimeInterval: 0.05)
        let ranBeforeStart = ran.load(ordering: .relaxed)
        #expect(!ranBeforeStart)
        #expect(thread.join(waitingAtMost: 0))
        thread.start { _ in ran.store(true, ordering: .relaxed) }
        #expect(thread.join(waitingAtMost: 10))
        let ranAfterStart = ran.load(ordering: .relaxed)
        #expect(ranAfterStart)
    }

    @Test func aStopAskedBeforeTheWaitEndsItToo() {
        let stop = ThreadStop()
        stop.request()
        #expect(stop.wait(seconds: 3_600))
        #expect(stop.wait(seconds: 3_600))
        #expect(stop.isStopped)
    }
}
