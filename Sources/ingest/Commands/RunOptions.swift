import ArgumentParser
import IngestPipeline

/// The options `ingest import` and `ingest resume` share.
struct RunOptions: ParsableArguments {
    @Option(help: "Worker contexts (default: the pipeline's, else the number of cores).")
    var workers: Int?

    @Option(name: .customLong("max-rejects"), help: "Stop (resumably) once more than this many records are rejected.")
    var maxRejects: Int?

    @Flag(help: "Print nothing but errors.")
    var quiet = false

    @Option(name: .customLong("log-level"),
            help: "Log on stderr from this level: trace (each record), debug (each chunk, save, wait, lookup), info (the run's stages), warning (default; also INGEST_LOG_LEVEL).")
    var logLevel: String?

    @OptionGroup(title: "Metrics")
    var metrics: MetricsOptions

    func validate() throws {
        if let workers, workers < 1 || workers > PipelineSpec.maxWorkers {
            throw ValidationError("--workers must be from 1 to \(PipelineSpec.maxWorkers) (each worker is a thread with its own context and connection; more than the machine's cores seldom helps)")
        }
        if let maxRejects, maxRejects < 0 { throw ValidationError("--max-rejects must be 0 or more") }
    }
}
