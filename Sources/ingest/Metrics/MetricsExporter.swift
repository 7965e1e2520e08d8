import CoreMetrics
import Foundation
import IngestJSON
import IngestStore
import Prometheus

/// A run's metrics kept in a Prometheus registry, written to a file every few seconds
/// (replaced whole, so a collector never reads half of it) and served over HTTP, as
/// `MetricsOptions` asks.
final class MetricsExporter: Sendable {
    /// How often the file is rewritten while the run goes.
    static let interval = 5.0

    let registry = PrometheusCollectorRegistry()
    let factory: PrometheusMetricsFactory
    private let file: String?
    private let writer = ManagedThread(name: "ingest.metrics-file")
    private let endpoint: MetricsEndpoint?

    /// The port the endpoint listens on (the one chosen when 0 was asked), if any.
    var boundPort: Int? { endpoint?.port }

    /// - Throws: `CommandFailure` when `file` cannot be written (checked now, before the
    ///   run) or the endpoint cannot listen on `host`:`port`.
    init(file: String?, host: String, port: Int?) throws {
        var factory = PrometheusMetricsFactory(registry: registry)
        // Saves take milliseconds to seconds; Prometheus' default buckets stop at 10 s.
        factory.defaultDurationHistogramBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60].map {
            Duration.milliseconds(Int64($0 * 1000))
        }
        self.factory = factory
        self.file = file
        if let file { try FileOpsCLI.write("", to: file) }
        let registry = registry
        endpoint = try port.map { port in
            do {
                return try MetricsEndpoint(host: host, port: port) { registry.emitToBuffer() }
            } catch {
                throw CommandFailure("--metrics-port \(port): \(error)")
            }
        }
        endpoint?.start()
        if let file {
            writer.start { stop in
                while !stop.wait(seconds: Self.interval) {
                    try? FileOps.writeAtomically(registry.emitToBuffer(), to: file)
                }
            }
        }
    }

    /// Stops the endpoint and writes the file with the final counts.
    /// - Throws: `CommandFailure` when the file cannot be written.
    func finish() throws {
        _ = writer.stop()
        endpoint?.stop()
        if let file { try FileOpsCLI.write(String(decoding: registry.emitToBuffer(), as: UTF8.self), to: file) }
    }
}
