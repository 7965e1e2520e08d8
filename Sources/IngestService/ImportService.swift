public import IngestPipeline
public import ServiceLifecycle
import IngestStore
import Synchronization

/// One import run as a service of a swift-service-lifecycle `ServiceGroup`, beside the
/// application's other services: `run()` imports on a thread of its own (an import
/// blocks; the cooperative pool must not), and a graceful shutdown of the group, or the
/// cancellation of the task that runs it, stops the import at its next save boundary as
/// `Importer.cancel()` does. Whatever was saved stays, and the run is resumable (run the
/// same import again, or `ingest resume`). Any `Importer` serves: a feed into a SQLite
/// store or a PostgreSQL database, or a process joining a PostgreSQL run.
///
/// ```swift
/// let importer = try Importer(pipeline: pipelineBytes, options: .init(feed: "photos.json", store: "photos.sqlite"))
/// let group = ServiceGroup(configuration: .init(
///     services: [.init(service: ImportService(importer), successTerminationBehavior: .gracefullyShutdownGroup),
///                .init(service: httpServer)],
///     gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
/// try await group.run()
/// ```
public final class ImportService: Service, Sendable {
    private let importer: Importer
    private let finished = Mutex<Outcome?>(nil)
    private let onReport: @Sendable (ImportReport) -> Void

    /// How the service's run ended.
    public enum Outcome: Sendable {
        /// The import ran to its end, or this process's part of it did (`report`).
        case finished(ImportReport)
        /// A shutdown or a cancellation stopped it at a save boundary; the run is resumable.
        /// On PostgreSQL the report says what this process saved until then.
        case stopped(ImportReport?)
    }

    /// - Parameters:
    ///   - importer: the run to make (made with the options, pipeline and store it imports).
    ///   - onReport: called with the run's report when the import ends, stopped or not
    ///     (a stopped SQLite run has none: its store's status says how far it got).
    public init(_ importer: Importer, onReport: @escaping @Sendable (ImportReport) -> Void = { _ in }) {
        self.importer = importer
        self.onReport = onReport
    }

    /// How the last `run()` ended; nil before it ends.
    public var outcome: Outcome? { finished.withLock { $0 } }

    /// Runs the import until it ends, or until a graceful shutdown or a cancellation
    /// stops it at a save boundary (then it returns without an error).
    /// - Throws: what `Importer.run()` throws, but `ImportInterrupted` for a stop asked of it.
    public func run() async throws {
        let outcome = try await Self.run(importer)
        finished.withLock { $0 = outcome }
        switch outcome {
        case .finished(let report), .stopped(let report?): onReport(report)
        case .stopped(nil): break
        }
    }

    /// Runs `importer` on a thread of its own; a graceful shutdown or a cancellation of the
    /// calling task stops it at a save boundary.
    static func run(_ importer: Importer) async throws -> Outcome {
        try await withGracefulShutdownHandler {
            try await withTaskCancellationHandler {
                try await runOnThread(importer)
            } onCancel: {
                importer.cancel()
            }
        } onGracefulShutdown: {
            importer.cancel()
        }
    }

    private static func runOnThread(_ importer: Importer) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            let thread = ManagedThread(name: "ingest.service")
            thread.start { _ in
                do {
                    let report = try importer.run()
                    continuation.resume(returning: report.stopped == true ? .stopped(report) : .finished(report))
                } catch is ImportInterrupted where importer.isCancelled {
                    continuation.resume(returning: .stopped(nil))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
