import Foundation
import IngestJSON
import IngestPipeline
import IngestStore

/// `ingest import` without --pipeline: the pipeline inferred from the feed (standard
/// input included), and an empty feed.
extension Ingest.Import {
    /// Where an import's pipeline came from, for the run's record and the summary.
    enum PipelineSource {
        case given, inferredNow, inferredEarlier
        /// The run records a pipeline inferred from a feed (now or by an earlier import).
        var isInferred: Bool { self != .given }
    }

    /// The --pipeline file; without one, the pipeline inferred for this store before
    /// (STORE.pipeline.json, so later feeds map the same way), or one inferred now.
    func loadOrInferPipeline() throws -> (PipelineSpec, String, PipelineSource) {
        if let pipeline { return (try PipelineSpec.load(path: pipeline), pipeline, .given) }
        let kept = store + ".pipeline.json"
        if FileManager.default.fileExists(atPath: kept) && !deleteStore {
            if shape.isGiven {
                throw CommandFailure("\(store) keeps the pipeline inferred by its first import (\(kept)), whose \"feed\" says where the records are: edit it and pass --pipeline \(kept), or pass --delete-store to infer one again")
            }
            if !quiet { Console.error("ingest: no --pipeline: using \(kept), inferred for this store by an earlier import\n") }
            return (try PipelineSpec.load(path: kept), kept, .inferredEarlier)
        }
        let inference = try inferFromFeed()
        try FileOpsCLI.write(inference.text, to: kept)
        if !quiet {
            Console.error("ingest: no --pipeline: inferred one from the feed and kept it as \(kept) (edit it and pass --pipeline to change the mapping)\n")
            Ingest.Infer.explain(inference, to: nil)
        }
        return (inference.spec, kept, .inferredNow)
    }

    /// The pipeline inferred from the feed (standard input included, see `readingTwice`).
    /// - Throws: `CommandFailure` for a named pipe (read once, and not Ingest's to copy in
    ///   its place); what `StandardInputCopy` and `PipelineInference.infer` throw.
    func inferFromFeed() throws -> PipelineInference.Inference {
        guard feed == "-" || !FileOps.isReadOnce(feed) else {
            throw CommandFailure("a feed on a pipe (\(feed)) needs --pipeline: inferring one reads the feed before the import does, and a pipe can be read only once. Pipe it to standard input instead (… | ingest import - --store \(ShellWord.quoted(store))), which Ingest copies to a file first")
        }
        return try readingTwice { path, name in
            var options = inference
            options.name = name
            return try PipelineInference.infer(feed: path, options: options)
        }
    }

    /// `body`'s result for a path that reads the feed before the import does (`name`: what
    /// to call it, when the path stands in for it). Standard input is read to its end into
    /// a file of Ingest's own first (beside a SQLite store, else in the temporary
    /// directory), and afterwards made the process's standard input again, so the import
    /// reads the very records `body` read.
    func readingTwice<T>(_ body: (_ path: String, _ name: String?) throws -> T) throws -> T {
        guard feed == "-" else { return try body(feed, nil) }
        var directory = PostgresURL.isPostgres(store) ? FileManager.default.temporaryDirectory.path : (store as NSString).deletingLastPathComponent
        if directory.isEmpty { directory = "." }
        let copy = try StandardInputCopy(into: directory)
        if !quiet {
            Console.error("ingest: read standard input to its end (\(ByteCount.format(copy.bytes))) into a file of Ingest's own in \(directory), to read a sample of its records before importing the same records; the file has no name and goes when the import ends\n")
        }
        let result = try body(copy.path, feed)
        try copy.becomeStandardInput()
        return result
    }

    /// What an import of a feed without records says (on standard output, as a summary).
    func nothingToImport(_ empty: PipelineInference.EmptyFeed) -> String {
        let made = PostgresURL.isPostgres(store) || FileManager.default.fileExists(atPath: store)
        return "\(empty.feed) → \(store): the feed holds no records: nothing to import, and no pipeline inferred; \(store) "
            + (made ? "is as it was" : "was not made")
    }
}
