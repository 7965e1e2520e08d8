import Foundation

/// Makes workers commit chunks in feed order, so that several workers leave the store
/// exactly as one does when records repeat a key across chunks (a later record's
/// fields win, whichever worker reads it first). Workers parse and map a whole chunk
/// at once, then wait here for every earlier chunk to be committed: with two workers,
/// one maps chunk k+1 while the other commits chunk k.
final class CommitOrder: @unchecked Sendable {
    private let condition = NSCondition()
    /// Chunks below this are all committed (or were done before the run).
    private var lowest = 1
    private var finished = Set<Int>()
    private var cancelled = false

    /// Blocks until every chunk before `chunk` is finished; false when the run stopped.
    func waitForTurn(_ chunk: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while lowest < chunk && !cancelled { condition.wait() }
        return !cancelled
    }

    /// `chunk` is committed whole (or needed nothing this run).
    func finish(_ chunk: Int) {
        condition.lock()
        finished.insert(chunk)
        while finished.remove(lowest) != nil { lowest += 1 }
        condition.broadcast()
        condition.unlock()
    }

    /// The run failed: waiting workers return.
    func cancel() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
    }
}
