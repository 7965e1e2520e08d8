import ArgumentParser

/// `--metrics-file` and `--metrics-port`, on the commands that import (`import`, `join`,
/// `resume`): the run's metrics in Prometheus' text format, for node-exporter's textfile
/// collector or for a scrape.
struct MetricsOptions: ParsableArguments {
    @Option(name: .customLong("metrics-file"),
            help: "Write the run's metrics to this file in Prometheus' text format, every few seconds and at the end (for node-exporter's textfile collector).")
    var file: String?

    @Option(name: .customLong("metrics-port"),
            help: "Serve the run's metrics at http://HOST:PORT/metrics while it runs (0: a free port, printed on stderr).")
    var port: Int?

    @Option(name: .customLong("metrics-host"), help: "The IPv4 address --metrics-port listens on (default: 127.0.0.1, this machine only).")
    var host = "127.0.0.1"

    func validate() throws {
        if let port, !(0...65_535).contains(port) { throw ValidationError("--metrics-port must be from 0 to 65535") }
        if port == nil && host != "127.0.0.1" { throw ValidationError("--metrics-host goes with --metrics-port") }
    }

    /// Runs `body` with a metrics factory whose metrics are written and served as the
    /// options ask (nil when they ask for neither), and writes the file a last time after
    /// it, whether it returned or threw.
    /// - Throws: `CommandFailure` when the file cannot be written or the port not listened on; what `body` throws.
    func exporting<T>(quiet: Bool, _ body: (MetricsExporter?) throws -> T) throws -> T {
        guard file != nil || port != nil else { return try body(nil) }
        let exporter = try MetricsExporter(file: file, host: host, port: port)
        if let bound = exporter.boundPort, !quiet {
            Console.error("ingest: metrics at http://\(host):\(bound)/metrics\n")
        }
        let result: T
        do {
            result = try body(exporter)
        } catch {
            try? exporter.finish()
            throw error
        }
        try exporter.finish()
        return result
    }
}
