import ArgumentParser

/// The options `ingest import` and `ingest resume` share.
struct RunOptions: ParsableArguments {
    @Option(help: "Worker contexts (default: the pipeline's, else the number of cores).")
    var workers: Int?

    @Option(name: .customLong("max-rejects"), help: "Stop (resumably) once more than this many records are rejected.")
    var maxRejects: Int?

    @Flag(help: "Print nothing but errors.")
    var quiet = false

    func validate() throws {
        if let workers, workers < 1 { throw ValidationError("--workers must be at least 1") }
        if let maxRejects, maxRejects < 0 { throw ValidationError("--max-rejects must be 0 or more") }
    }
}
