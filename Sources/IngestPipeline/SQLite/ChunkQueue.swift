import Dispatch
import IngestJSON
import Synchronization

/// Hands chunks to workers in order as the splitter finishes them, so importing starts
/// on chunk 1 while later chunks are still being written. `pop()` waits for the next
/// chunk and returns nil once the queue is closed and empty. (An array and a read index,
/// not swift-collections' `Deque`: a run has at most a few thousand chunks, popped once
/// each in order, so nothing is ever removed from the front.)
final class ChunkQueue: Sendable {
    private let state = Mutex<(chunks: [ChunkInfo], next: Int, closed: Bool)>(([], 0, false))
    /// One signal per chunk pushed, plus one per waiting worker when closed.
    private let available = DispatchSemaphore(value: 0)
    private let consumers: Int

    init(consumers: Int) {
        self.consumers = consumers
    }

    func push(_ chunk: ChunkInfo) {
        let accepted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.chunks.append(chunk)
            return true
        }
        if accepted { available.signal() }
    }

    /// No more chunks: every worker's `pop()` returns nil once the queue is drained.
    func close() {
        let wasOpen = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        if wasOpen { for _ in 0..<consumers { available.signal() } }
    }

    func pop() -> ChunkInfo? {
        available.wait()
        return state.withLock { state -> ChunkInfo? in
            guard state.next < state.chunks.count else { return nil }
            defer { state.next += 1 }
            return state.chunks[state.next]
        }
    }

    /// Chunks pushed so far.
    var count: Int { state.withLock { $0.chunks.count } }
}
