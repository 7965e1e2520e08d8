import Foundation
import IngestJSON
import IngestPipeline
import IngestStore

/// `import --evolve` and `infer --update`: a store's pipeline grown by what a newer feed
/// has (`PipelineEvolution`), explained on stderr.
enum PipelineUpdate {
    /// The pipeline of `store`'s latest run: its text, the file it was read from (SQLite
    /// runs record a path; PostgreSQL runs keep the text), and what the store counted
    /// that it does not map.
    /// - Throws: `CommandFailure` when the store has no run, or its pipeline file is gone.
    static func storePipeline(_ store: String) throws -> (bytes: [UInt8], file: String?, unmapped: MemberCensus) {
        if PostgresURL.isPostgres(store) {
            let url = try PostgresURL(store)
            guard let (text, unmapped) = try PostgresImport.latestPipeline(url: url) else {
                throw CommandFailure("\(store): no import has run yet, so there is no pipeline to update")
            }
            return (Array(text.utf8), nil, unmapped)
        }
        let status = try ImportStatus.read(store: store)
        guard let file = status.latest.pipeline else {
            throw CommandFailure("\(store) does not record its last run's pipeline file; pass it with --pipeline")
        }
        guard FileManager.default.fileExists(atPath: file) else {
            throw CommandFailure("\(store)'s last run read its pipeline from \(file), which is gone; pass the pipeline with --pipeline")
        }
        return (try FileOps.readFile(file), file, status.latest.members)
    }

    /// `pipeline` evolved by a sample of `feed`, read the way the pipeline reads the feed
    /// (`name`: the feed's name, when `feed` is a path standing in for it).
    /// - Throws: what `PipelineInference.infer` and `PipelineEvolution.evolve` throw.
    static func evolve(_ pipeline: [UInt8], feed: String, name: String? = nil, sample: Int, unmapped: MemberCensus) throws -> PipelineEvolution.Evolution {
        if let model = PipelineSpec.namedModelFile(pipeline) {
            throw CommandFailure("the pipeline names its model file (\(model)), which an update cannot change: add the attributes to the model")
        }
        let spec = try PipelineSpec.parse(pipeline)
        var options = PipelineInference.Options(sample: sample, shape: spec.feed, form: spec.recordForm)
        options.name = name
        let inference = try PipelineInference.infer(feed: feed, options: options)
        return try PipelineEvolution.evolve(pipeline, by: inference, unmapped: unmapped)
    }

    /// The evolution's lines on stderr, under `title`.
    static func explain(_ evolution: PipelineEvolution.Evolution, title: String) {
        Console.error(title + (evolution.added.isEmpty ? ": the feed's sample has no field the pipeline does not map" : ": \(evolution.added.count) attribute(s) added") + "\n")
        for line in evolution.report { Console.error("  " + line + "\n") }
    }
}
