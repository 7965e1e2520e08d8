import ArgumentParser
import IngestPipeline
import IngestStore

extension Ingest.Import {
    /// `ingest import --dry-run`: the run on a copy of the store, and what it would do;
    /// the records it would reject go to `rejects`.
    /// - Throws: `ExitCode(3)` when it would reject records; what `Importer.dryRun` throws.
    func dryRunImport(rejects: String) throws {
        let (spec, pipeline, _) = try loadOrInferPipeline()
        var options = Importer.Options(feed: feed, store: store, workers: running.workers, saveEvery: saveEvery,
                                       chunkSize: chunkSize, abandonRun: abandonRun, maxRejects: running.maxRejects,
                                       keepIndexes: keepIndexes, pipelinePath: pipeline,
                                       logger: try StderrLogHandler.logger(running.logLevel))
        options.again = again
        try FileOpsCLI.checkWritable(rejects)
        // A stop (Ctrl-C, SIGTERM) ends the run on the copy at a save, and the copy is removed.
        var signals: StopSignals?
        defer { signals?.cancel() }
        let found: DryRunReport
        do {
            found = try Importer.dryRun(spec: spec, options: options, rejectsTo: rejects) { importer in
                signals = StopSignals { importer.cancel() }
            }
        } catch is ImportInterrupted {
            throw CommandFailure("the dry run was stopped before its end; its copy is removed, and nothing was written to \(store)")
        }
        if let leftover = found.leftover { Console.error("ingest: \(leftover)\n") }
        let report = found.report
        if !running.quiet {
            print("dry run: \(report.feed) → \(report.store) (nothing written to the store): \(Format.records(report.records)) in \(report.chunks) chunk(s)")
            print("  would import \(Format.count(report.imported)) and reject \(Format.count(report.rejectedThisRun))"
                  + (found.rejectsFile.map { " (the rejected records and why: \($0))" } ?? ""))
            print("  " + Self.outcomesLine(report.outcomes ?? RecordOutcomes()))
            let entities = Set(found.countsBefore.keys).union(found.countsAfter.keys).sorted()
            print("  " + entities.map { entity in
                let (before, after) = (found.countsBefore[entity] ?? 0, found.countsAfter[entity] ?? 0)
                return "\(entity): \(Format.count(before)) → \(Format.count(after))" + (after > before ? " (+\(Format.count(after - before)))" : "")
            }.joined(separator: ", "))
            report.members?.lines(indent: "  ", more: "a real import's report lists them all").forEach { print($0) }
        }
        if report.stopped == true { throw CommandFailure("the dry run was stopped before its end: what it printed is of the records it got to; its copy is removed") }
        if report.rejectedThisRun > 0 { throw ExitCode(3) }
    }
}
