import ArgumentParser
import IngestJSON

/// The generated feeds a bench reads, and where they and its stores go: the options
/// `bench split` and `bench import` share.
struct BenchFeedOptions: ParsableArguments {
    @Option(help: "Records in the large feed.")
    var records = 1_000_000

    @Option(name: .customLong("small-records"), help: "Records in the small feed (for the memory comparison).")
    var smallRecords = 100_000

    @Option(name: .customLong("feed-style"), help: "The generated feed: realistic (members missing, null and empty, escapes, unmapped nested members, a long tail of photographers) or classic (the kinder feed of earlier figures).")
    var feedStyle: FeedGenerator.Style = .realistic

    @Option(name: .customLong("repeat-keys"), help: "Records giving each photo (1: each once). Above 1, each photo comes again every 500 records with other values, as in re-exported catalogues and change logs (see ingest generate --help).")
    var repeatKeys = 1

    @Option(name: .customLong("work-dir"), help: "Where feeds, chunks and stores go.")
    var workDirectory = "/tmp/ingest-bench"

    func validate() throws {
        if records < 1 || smallRecords < 1 { throw ValidationError("record counts must be at least 1") }
        if repeatKeys < 1 || repeatKeys > 1_000 { throw ValidationError("--repeat-keys takes 1 to 1000") }
    }
}
