#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import IngestJSON

extension Ingest {
    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a deterministic feed of Flickr-like photo records.",
            discussion: """
            The same --records, --seed and --style give the same bytes on every machine.

            Example:
              ingest generate --records 100000 --ndjson --output photos.ndjson
            """
        )

        @Option(help: "Number of records.")
        var records: Int

        @Option(help: "Seed of the generator.")
        var seed: UInt64 = 42

        @Option(help: "realistic (members missing, null and empty, numbers as strings, escapes and non-ASCII text, unmapped nested objects and arrays, a long tail of photographers) or classic (every member present, in one order: the feed of earlier benchmark figures).")
        var style: FeedGenerator.Style = .realistic

        @Flag(help: "Write newline-delimited JSON instead of one array.")
        var ndjson = false

        @Option(name: .shortAndLong, help: "Output file ('-' or none: standard output).")
        var output: String?

        func validate() throws {
            if records < 0 { throw ValidationError("--records must be 0 or more") }
            if output?.isEmpty == true { throw ValidationError("--output is empty (give a file, or - for standard output)") }
        }

        func run() throws {
            try FeedGenerator(records: records, seed: seed, ndjson: ndjson, style: style).write(to: output)
            if let output, output != "-" {
                Console.error("wrote \(records) records to \(output)\n")
            }
        }
    }
}

