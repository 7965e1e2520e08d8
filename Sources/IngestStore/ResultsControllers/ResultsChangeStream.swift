import Synchronization

/// The `changes` stream of a fetched results controller, made when a reader first asks for
/// it: until then a change is handed to the delegate only and nothing is kept. Once made, it
/// keeps what its buffering policy says for a reader that is behind, never more.
///
/// Sendable (the stream may be asked for from any queue while the controller yields on its
/// context's); a reader that stops (its task cancelled, or the stream finished) lets the
/// next ask make a new stream.
final class ResultsChangeStream: Sendable {
    private struct Made: Sendable {
        let stream: AsyncStream<ResultsChange>
        let continuation: AsyncStream<ResultsChange>.Continuation
    }

    private let made = Mutex<Made?>(nil)

    /// The stream, made now with `policy` when there is none.
    func stream(_ policy: AsyncStream<ResultsChange>.Continuation.BufferingPolicy) -> AsyncStream<ResultsChange> {
        made.withLock { made in
            if let made { return made.stream }
            let (stream, continuation) = AsyncStream.makeStream(of: ResultsChange.self, bufferingPolicy: policy)
            continuation.onTermination = { [weak self] _ in self?.drop() }
            made = Made(stream: stream, continuation: continuation)
            return stream
        }
    }

    /// Whether a reader asked for the stream (and has not stopped).
    var isMade: Bool { made.withLock { $0 != nil } }

    /// Hands `change` to the reader, if there is one; nothing is kept otherwise.
    func yield(_ change: ResultsChange) {
        guard let continuation = made.withLock({ $0?.continuation }) else { return }
        continuation.yield(change)
    }

    func finish() {
        made.withLock { $0?.continuation }?.finish()
    }

    private func drop() {
        made.withLock { $0 = nil }
    }
}
