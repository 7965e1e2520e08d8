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
            The same --records, --seed, --style and --repeat-keys give the same bytes on every machine.

            With --repeat-keys N, each photo is given by N records, as in a catalogue
            re-exported with corrections or a change log: photos come in groups of 500, each
            group given N times in a row, the later records with other titles and views and
            their photographers under other names. The store must end with each photo's last
            record, whatever the number of workers or processes.

            Example:
              ingest generate --records 100000 --ndjson --output photos.ndjson
              ingest generate --records 60000 --repeat-keys 4 --output repeated.json
            """
        )

        @Option(help: "Number of records.")
        var records: Int

        @Option(help: "Seed of the generator.")
        var seed: UInt64 = 42

        @Option(help: "realistic (members missing, null and empty, numbers as strings, escapes and non-ASCII text, unmapped nested objects and arrays, a long tail of photographers) or classic (every member present, in one order: the feed of earlier benchmark figures).")
        var style: FeedGenerator.Style = .realistic

        @Option(name: .customLong("repeat-keys"), help: "Records giving each photo (1: each once), each again every 500 records with other values.")
        var repeatKeys = 1

        @Flag(help: "Write newline-delimited JSON instead of one array.")
        var ndjson = false

        @Option(name: .shortAndLong, help: "Output file ('-' or none: standard output).")
        var output: String?

        func validate() throws {
            if records < 0 { throw ValidationError("--records must be 0 or more") }
            if repeatKeys < 1 || repeatKeys > 1_000 { throw ValidationError("--repeat-keys takes 1 to 1000") }
            if output?.isEmpty == true { throw ValidationError("--output is empty (give a file, or - for standard output)") }
        }

        func run() throws {
            try FeedGenerator(records: records, seed: seed, ndjson: ndjson, style: style, repeatKeys: repeatKeys).write(to: output)
            if let output, output != "-" {
                Console.error("wrote \(records) records to \(output)\n")
            }
        }
    }
}

