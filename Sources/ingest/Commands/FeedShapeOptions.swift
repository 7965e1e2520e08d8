import ArgumentParser
import IngestJSON

/// The options that say where a feed keeps its records and what limits apply.
struct FeedShapeOptions: ParsableArguments {
    @OptionGroup var records: RecordShapeOptions

    @Option(name: .customLong("max-depth"), help: "Deepest nesting allowed.")
    var maxDepth = FeedOptions.defaultMaxDepth

    @Option(name: .customLong("max-record-size"), help: "Largest record in bytes.")
    var maxRecordSize = FeedOptions.defaultMaxRecordBytes

    func validate() throws {
        // The parser keeps depths in 32 bits; no feed nests two billion levels.
        if maxDepth < 1 || maxDepth > Int(Int32.max) { throw ValidationError("--max-depth must be from 1 to \(Int32.max)") }
        if maxRecordSize < 1 { throw ValidationError("--max-record-size must be at least 1") }
    }

    var feedOptions: FeedOptions {
        FeedOptions(shape: records.shape ?? .array, maxDepth: maxDepth, maxRecordBytes: maxRecordSize)
    }

    var form: RecordForm { records.form }
}
