import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// SIGINT, SIGTERM and SIGHUP asking a run to stop at its next save boundary: `ingest
/// import` and `ingest join` install these, then exit 128 + the signal's number.
final class StopSignals {
    /// The last signal received (0: none), shared with the handlers.
    private final class Received: Sendable {
        let number = Atomic<Int32>(0)
    }

    private let received = Received()
    private var sources: [any DispatchSourceSignal] = []

    /// Calls `stop` (on another thread) when one of the signals arrives, until `cancel`.
    init(_ stop: @escaping @Sendable () -> Void) {
        let received = received
        for signalNumber in [SIGINT, SIGTERM, SIGHUP] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                received.number.store(signalNumber, ordering: .relaxed)
                stop()
            }
            source.resume()
            sources.append(source)
        }
    }

    func cancel() { sources.forEach { $0.cancel() } }

    /// Says where the run stopped and how to go on, then exits 128 + the signal (SIGINT if none was seen).
    func exit(continueWith next: String) -> Never {
        let number = received.number.load(ordering: .relaxed)
        let name = number == SIGTERM ? "SIGTERM" : number == SIGHUP ? "SIGHUP" : "SIGINT"
        Console.error("ingest: stopped at a save boundary (\(name)); continue with: \(next)\n")
        Glibc.exit(128 + (number == 0 ? SIGINT : number))
    }
}
