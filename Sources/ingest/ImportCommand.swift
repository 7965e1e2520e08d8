import ArgumentParser
import Foundation
import IngestJSON
import IngestPipeline
import IngestStore

extension Ingest {
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import a feed into a store with a pipeline; run again to continue a stopped import.",
            discussion: """
            Splits the feed into chunks (next to the store unless --chunks), then imports them \
            with --workers private contexts, each saving every --save-every records together \
            with the resume marker. Records that cannot be mapped go to STORE.rejects.ndjson.
            """
        )

        @Argument(help: "The feed file.")
        var feed: String

        @Option(help: ArgumentHelp("The pipeline file.", valueName: "file"))
        var pipeline: String

        @Option(help: ArgumentHelp("The store file (created if missing).", valueName: "file"))
        var store: String

        @Option(help: "Worker contexts (default: the pipeline's, else the number of cores).")
        var workers: Int?

        @Option(name: .customLong("save-every"), help: "Records per save.")
        var saveEvery: Int?

        @Option(name: .customLong("chunk-size"), help: "Records per chunk file.")
        var chunkSize: Int?

        @Option(help: ArgumentHelp("Directory for the chunk files.", valueName: "dir"))
        var chunks: String?

        @Flag(help: "Start over, even in a store filled from another feed or pipeline.")
        var restart = false

        @Flag(help: "Print nothing but errors.")
        var quiet = false

        func validate() throws {
            for (name, value) in [("--workers", workers), ("--save-every", saveEvery), ("--chunk-size", chunkSize)] {
                if let value, value < 1 { throw ValidationError("\(name) must be at least 1") }
            }
        }

        func run() throws {
            let spec = try PipelineSpec.load(path: pipeline)
            let importer = Importer(spec: spec, options: .init(feed: feed, store: store, chunks: chunks, workers: workers,
                                                              saveEvery: saveEvery, chunkSize: chunkSize, restart: restart))
            let report = try importer.run()
            guard !quiet else { return }
            print("\(feed) → \(store): \(Format.count(report.records)) records in \(report.chunks) chunk(s)")
            print("  imported \(Format.count(report.imported)) this run, \(Format.count(report.rejected)) rejected in all (\(report.rejectsFile))")
            print("  " + report.counts.sorted { $0.key < $1.key }.map { "\($0.key): \(Format.count($0.value))" }.joined(separator: ", "))
            print("  \(Format.seconds(report.seconds)), \(Format.count(Int(Double(report.imported) / max(report.seconds, 1e-9)))) records/s")
        }
    }
}
