import ArgumentParser
import IngestJSON

/// The options that say where a feed keeps its records and what limits apply.
struct FeedShapeOptions: ParsableArguments {
    @Option(name: .customLong("records-at"), help: "Key path of the records array in a top-level object, e.g. features or data.items.")
    var recordsAt: String?

    @Flag(help: "The feed is newline-delimited JSON: one record per line.")
    var ndjson = false

    @Flag(help: "The records are the values of an object (at --records-at, else the top-level one); each gets its name as \"@key\".")
    var keyed = false

    @Flag(name: .customLong("header-row"), help: "The records are arrays of values; the first one names the columns.")
    var headerRow = false

    @Option(name: .customLong("max-depth"), help: "Deepest nesting allowed.")
    var maxDepth = FeedOptions.defaultMaxDepth

    @Option(name: .customLong("max-record-size"), help: "Largest record in bytes.")
    var maxRecordSize = FeedOptions.defaultMaxRecordBytes

    func validate() throws {
        if recordsAt != nil && ndjson {
            throw ValidationError("--records-at and --ndjson exclude each other")
        }
        if keyed && ndjson { throw ValidationError("--keyed and --ndjson exclude each other") }
        if let recordsAt, FeedShape.recordsAt(recordsAt) == nil {
            throw ValidationError("--records-at needs dot-separated keys, none empty (got '\(recordsAt)')")
        }
        if maxDepth < 1 { throw ValidationError("--max-depth must be at least 1") }
        if maxRecordSize < 1 { throw ValidationError("--max-record-size must be at least 1") }
    }

    var feedOptions: FeedOptions {
        var shape: FeedShape = ndjson ? .ndjson : recordsAt.flatMap(FeedShape.recordsAt) ?? .array
        if keyed {
            if case .keyPath(let keys) = shape { shape = .keyed(keys) } else { shape = .keyed([]) }
        }
        return FeedOptions(shape: shape, maxDepth: maxDepth, maxRecordBytes: maxRecordSize)
    }

    var form: RecordForm { headerRow ? .rows(columns: nil) : .objects }
}
