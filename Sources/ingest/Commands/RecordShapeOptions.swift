import ArgumentParser
import IngestJSON
import IngestPipeline

/// Where a feed keeps its records: the shape options `split` and `infer` take, and that
/// `import` takes for a feed it infers a pipeline for.
struct RecordShapeOptions: ParsableArguments {
    @Option(name: .customLong("records-at"), help: "Key path of the records array in a top-level object, e.g. features or data.items.")
    var recordsAt: String?

    @Flag(help: "The feed is newline-delimited JSON: one record per line.")
    var ndjson = false

    @Flag(help: "The records are the values of an object (at --records-at, else the top-level one); each gets its name as \"@key\".")
    var keyed = false

    @Flag(name: .customLong("header-row"), help: "The records are arrays of values; the first one names the columns.")
    var headerRow = false

    func validate() throws {
        if recordsAt != nil && ndjson {
            throw ValidationError("--records-at and --ndjson exclude each other")
        }
        if keyed && ndjson { throw ValidationError("--keyed and --ndjson exclude each other") }
        if let recordsAt, FeedShape.recordsAt(recordsAt) == nil {
            throw ValidationError("--records-at needs dot-separated keys, none empty (got '\(recordsAt)')")
        }
    }

    /// The options as given, for a command to repeat.
    var arguments: [String] {
        (recordsAt.map { ["--records-at", $0] } ?? []) + (ndjson ? ["--ndjson"] : []) + (keyed ? ["--keyed"] : [])
            + (headerRow ? ["--header-row"] : [])
    }

    /// Whether any option was given (else the shape is detected from the feed).
    var isGiven: Bool { recordsAt != nil || ndjson || keyed || headerRow }

    /// The shape the options name, or nil to detect it.
    var shape: FeedShape? {
        guard recordsAt != nil || ndjson || keyed else { return nil }
        var shape: FeedShape = ndjson ? .ndjson : recordsAt.flatMap(FeedShape.recordsAt) ?? .array
        if keyed {
            if case .keyPath(let keys) = shape { shape = .keyed(keys) } else { shape = .keyed([]) }
        }
        return shape
    }

    var form: RecordForm { headerRow ? .rows(columns: nil) : .objects }

    /// What inference reads: `sample` records, in the shape these options name (or detects).
    func inference(sample: Int) -> PipelineInference.Options {
        PipelineInference.Options(sample: sample, shape: shape, form: form)
    }
}
