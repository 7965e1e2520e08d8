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

            Example:
              ingest infer events.json.gz -o events-pipeline.json
              ingest import events.json.gz --pipeline events-pipeline.json --store events.sqlite
            """
        )

        @Argument(help: "The feed file (- for standard input is not supported: the shape is detected by reading it).")
        var feed: String

        @OptionGroup var shape: FeedShapeOptions

        @Option(help: "Records to read.")
        var sample = 1_000

        @Option(name: [.customShort("o"), .customLong("output")], help: ArgumentHelp("Write the pipeline here (default: standard output).", valueName: "file"))
        var output: String?

        func validate() throws {
            if sample < 1 { throw ValidationError("--sample must be at least 1") }
            if FileOps.isReadOnce(feed) {
                throw ValidationError("ingest infer reads a file (it is read twice: once for its shape, once for the sample); "
                    + (feed == "-" ? "standard input" : "\(feed) is a pipe, which") + " can be read only once: save the feed (or its first records) to a file first")
            }
        }

        func run() throws {
            let inference = try PipelineInference.infer(
                feed: feed, options: shape.records.inference(sample: sample))
            Self.explain(inference, to: output)
            if let output {
                try FileOpsCLI.write(inference.text, to: output)
            } else {
                print(inference.text, terminator: "")
            }
        }

        static func explain(_ inference: PipelineInference.Inference, to output: String?) {
            Console.error("ingest infer: read \(Format.count(inference.recordsRead)) record(s); \(inference.shape)\n")
            for line in inference.report { Console.error("  " + line + "\n") }
            if let output { Console.error("  pipeline written to \(output): edit it, then ingest import FEED --pipeline \(output) --store STORE\n") }
        }
    }
}
