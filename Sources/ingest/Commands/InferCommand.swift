import ArgumentParser
import Foundation
import IngestJSON
import IngestPipeline

extension Ingest {
    struct Infer: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a pipeline for a feed from a sample of its records.",
            discussion: """
            Reads the first --sample records and chooses a model and mappings: attribute types \
            (string, int64, double, bool, date), nested objects with an id-like field as related \
            entities (others flattened), arrays of such objects as to-many relationships, other \
            arrays as JSON text, and uniqueness on the record's id-like field. Each choice is \
            explained on stderr. The feed's shape is detected unless given.

            With --update STORE, the pipeline of the store's last run is grown instead: the \
            fields the feed has and it does not map become optional attributes, each \
            explained; a field whose type changed is reported, not converted. The result \
            goes to -o, else over the pipeline file that run read (a PostgreSQL run keeps \
            its pipeline in the store: it goes to standard output). The next import migrates \
            the store.

            Example:
              ingest infer events.json.gz -o events-pipeline.json
              ingest import events.json.gz --pipeline events-pipeline.json --store events.sqlite
              ingest infer --update events.sqlite newer-events.json.gz
            """
        )

        @Argument(help: "The feed file (- for standard input is not supported: the shape is detected by reading it).")
        var feed: String

        @OptionGroup var shape: FeedShapeOptions

        @Option(help: "Records to read.")
        var sample = 1_000

        @Option(help: ArgumentHelp("Grow the pipeline of this store's last run by what the feed adds, instead of inferring one.", valueName: "store"))
        var update: String?

        @Option(name: [.customShort("o"), .customLong("output")], help: ArgumentHelp("Write the pipeline here (default: standard output).", valueName: "file"))
        var output: String?

        func validate() throws {
            if sample < 1 { throw ValidationError("--sample must be at least 1") }
            if FileOps.isReadOnce(feed) {
                throw ValidationError("ingest infer reads a file (it is read twice: once for its shape, once for the sample); "
                    + (feed == "-" ? "standard input" : "\(feed) is not a regular file (a pipe or a device), which") + " can be read only once: save the feed (or its first records) to a file first")
            }
        }

        func run() throws {
            if let update {
                if shape.records.isGiven { throw CommandFailure("--update reads the feed as the store's pipeline says (its \"feed\"); leave out the shape options") }
                let (bytes, file, unmapped) = try PipelineUpdate.storePipeline(update)
                let evolution = try PipelineUpdate.evolve(bytes, feed: feed, sample: sample, unmapped: unmapped)
                PipelineUpdate.explain(evolution, title: "ingest infer --update: \(feed) against the pipeline of \(update)" + (file.map { " (\($0))" } ?? ""))
                if let target = output ?? file {
                    if !evolution.added.isEmpty || output != nil { try FileOpsCLI.write(evolution.text, to: target) }
                    Console.error("  pipeline " + (evolution.added.isEmpty && output == nil ? "unchanged: " : "written to ") + target + "\n")
                } else {
                    print(evolution.text, terminator: evolution.text.hasSuffix("\n") ? "" : "\n")
                }
                return
            }
            var options = shape.records.inference(sample: sample)
            (options.maxDepth, options.maxRecordBytes) = (shape.maxDepth, shape.maxRecordSize)
            let inference = try PipelineInference.infer(feed: feed, options: options)
            // Written before it is said to be: a path that cannot be written is said alone.
            if let output { try FileOpsCLI.write(inference.text, to: output) }
            Self.explain(inference, to: output)
            if output == nil { print(inference.text, terminator: "") }
        }

        static func explain(_ inference: PipelineInference.Inference, to output: String?) {
            Console.error("ingest infer: read \(Format.count(inference.recordsRead)) record(s); \(inference.shape)\n")
            for line in inference.report { Console.error("  " + line + "\n") }
            if let output { Console.error("  pipeline written to \(output): edit it, then ingest import FEED --pipeline \(output) --store STORE\n") }
        }
    }
}
