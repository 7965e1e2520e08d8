import Foundation
import IngestJSON
import IngestPipeline
import IngestStore

/// `ingest import` without --pipeline: the pipeline inferred from the feed (standard
/// input included), an empty feed, and members the inference sample did not reach.
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

    /// After a run whose pipeline this command inferred: the member paths it does not map
    /// are members first seen after the sample (the pipeline maps every one the sample
    /// had), so the run left them out. That is a failure naming them and the command that
    /// imports them, never a line in the summary alone (found by probing: such a run exited
    /// 0, and --quiet said nothing). Checked after the run, from the members the store
    /// counted, as the sample is all that is read before it.
    /// - Parameters:
    ///   - records: the feed's records, all of which a sample must read to reach the members.
    ///   - listedIn: where every member path is listed, when there are more than a line names.
    ///   - rejectsIn: where the rejected records are, when there are any.
    ///   - keyed: whether the record entity has a key, so that importing again updates.
    ///   - storeFirstRun: whether this run is the store's first (deleting it loses nothing else).
    /// - Throws: `CommandFailure` when members were left out.
    func checkSampleReachedEveryMember(_ members: MemberCensus?, records: Int, listedIn: String, rejected: Int, rejectsIn: String,
                                       keyed: Bool, storeFirstRun: Bool) throws {
        let ranked = (members?.ranked ?? []).filter { $0.path != MemberCensus.otherPaths }
        guard !ranked.isEmpty else { return }
        let listed = ranked.prefix(MemberCensus.listed).map { "\($0.path) (\(Format.count($0.records)) record\($0.records == 1 ? "" : "s"))" }
        let others = members?.unmapped[MemberCensus.otherPaths] != nil
        let more = ranked.count > MemberCensus.listed || others
            ? " and \(ranked.count - min(ranked.count, MemberCensus.listed)) more\(others ? ", and those past \(MemberCounter.pathLimit) paths counted together" : "") (\(listedIn))" : ""
        let sampled = sample ?? 1_000
        var message = "\(ranked.count) member path(s) first appear after the \(Format.count(sampled)) record(s) the pipeline was inferred from, "
            + "so the run imported its records without them: \(listed.joined(separator: ", "))\(more). "
        // A sample of every record reaches them: the feed's records, as this run counted them.
        func command(store target: String, _ extra: [String]) -> String {
            let words = (["ingest", "import", feed, "--store", target] + shape.arguments + ["--sample", String(records)] + extra)
                .map(ShellWord.quoted).joined(separator: " ")
            return feed == "-" ? "… | " + words : words
        }
        if storeFirstRun && !PostgresURL.isPostgres(store) {
            message += "To import them too, infer from every record and import the feed anew: \(command(store: store, ["--delete-store"])) (it deletes \(store), which holds this run alone)"
        } else if keyed {
            message += "To import them too, add them from a sample of every record and import the feed again, updating what this run imported: \(command(store: store, ["--evolve", "--again"]))"
        } else {
            // Without a key, importing again would add every record a second time.
            message += "The record entity has no key, so importing the feed again would add its records twice: to import them too, import it into a new store, inferring from every record: \(command(store: "NEW-STORE", []))"
        }
        if rejected > 0 { message += ". \(Format.count(rejected)) record(s) were rejected too (\(rejectsIn))" }
        throw CommandFailure(message)
    }
}
