import ArgumentParser
import IngestJSON

/// The options that say where a feed keeps its records and what limits apply.
struct FeedShapeOptions: ParsableArguments {
    @Option(name: .customLong("records-at"), help: "Key path of the records array in a top-level object, e.g. features or data.items.")
    var recordsAt: String?

    @Flag(help: "The feed is newline-delimited JSON: one record per line.")
    var ndjson = false

    @Option(name: .customLong("max-depth"), help: "Deepest nesting allowed.")
    var maxDepth = FeedOptions.defaultMaxDepth

    @Option(name: .customLong("max-record-size"), help: "Largest record in bytes.")
    var maxRecordSize = FeedOptions.defaultMaxRecordBytes

    func validate() throws {
        if recordsAt != nil && ndjson {
            throw ValidationError("--records-at and --ndjson exclude each other")
        }
        if let recordsAt, FeedShape.recordsAt(recordsAt) == nil {
            throw ValidationError("--records-at needs dot-separated keys, none empty (got '\(recordsAt)')")
        }
        if maxDepth < 1 { throw ValidationError("--max-depth must be at least 1") }
        if maxRecordSize < 1 { throw ValidationError("--max-record-size must be at least 1") }
    }

    var feedOptions: FeedOptions {
        let shape: FeedShape = ndjson ? .ndjson : recordsAt.flatMap(FeedShape.recordsAt) ?? .array
        return FeedOptions(shape: shape, maxDepth: maxDepth, maxRecordBytes: maxRecordSize)
    }
}
