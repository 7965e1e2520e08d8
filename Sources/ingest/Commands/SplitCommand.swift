import ArgumentParser
import IngestJSON

extension Ingest {
    struct Split: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Split a feed into numbered chunk files and a manifest.",
            discussion: """
            Writes DIR/chunk-000001.ndjson, chunk-000002.ndjson, … (one record per line) and, \
            last, DIR/manifest.json. Run again on the same feed and directory to continue \
            an interrupted split after its last complete chunk.

            Example:
              ingest split events.json.gz --out chunks --records-at events --keyed
            """
        )

        @Argument(help: "The feed: a file, - for standard input, or an http:// or https:// address.")
        var feed: String

        @Option(name: .customLong("out"), help: ArgumentHelp("Directory for the chunk files.", valueName: "dir"))
        var directory: String

        @Option(name: .customLong("chunk-size"), help: "Records per chunk file.")
        var chunkSize = SplitOptions.defaultChunkSize

        @OptionGroup var shape: FeedShapeOptions

        @Flag(help: "Start over in a directory that holds another split.")
        var force = false

        @Flag(help: "Print nothing but errors.")
        var quiet = false

        func validate() throws {
            if chunkSize < 1 { throw ValidationError("--chunk-size must be at least 1") }
        }

        func run() throws {
            let options = SplitOptions(feed: shape.feedOptions, chunkSize: chunkSize, force: force, form: shape.form)
            let report = try SplitRun(feed: feed, directory: directory, options: options, quiet: quiet).run()
            if !quiet { print(report) }
        }
    }
}

/// A split with progress on stderr and a summary for stdout; `split` and `demo` share it.
struct SplitRun {
    var feed: String
    var directory: String
    var options: SplitOptions
    var quiet: Bool

    func run() throws -> String {
        let splitter = Splitter(feedPath: feed, directory: directory, options: options)
        let progress = ProgressReporter(quiet: quiet, label: "split")
        splitter.onProgress = { progress.update(bytes: $0.bytesRead, total: $0.totalBytes, records: $0.records) }
        let clock = ContinuousClock()
        let start = clock.now
        let report = try splitter.run()
        let seconds = (clock.now - start).seconds
        progress.finish()
        return Self.summary(report, feed: feed, directory: directory, seconds: seconds)
    }

    /// What a feed holds beside its records, said in every summary.
    static func outsideRecordsLine(_ names: [String]) -> String {
        let list = names.map { "'\($0)'" }.joined(separator: ", ")
        return "outside the records: the top-level member\(names.count == 1 ? "" : "s") \(list) (not imported; to import the whole object as one record, read the feed with --ndjson)"
    }

    static func summary(_ report: SplitReport, feed: String, directory: String, seconds: Double) -> String {
        let manifest = report.manifest
        let bytes = manifest.feed.byteSize ?? 0
        var lines = ["\(feed): \(Format.records(manifest.totalRecords)), \(ByteCount.format(bytes)), \(manifest.shape.shape?.description ?? manifest.shape.kind)"]
        if report.alreadyComplete {
            lines.append("  \(directory) already holds this feed's complete split: \(manifest.chunks.count) chunks, nothing written")
        } else {
            lines.append("  \(manifest.chunks.count) chunk(s) of up to \(Format.count(manifest.chunkSize)) records in \(directory)/"
                + " (\(report.chunksWritten) written, \(report.chunksReused) kept from an earlier run)")
            lines.append("  \(Format.seconds(seconds)), \(Format.rate(Double(bytes) / 1_048_576 / seconds)) MiB/s, "
                + "\(Format.count(Int(Double(manifest.totalRecords) / max(seconds, 1e-9)))) records/s")
        }
        if let outside = manifest.outsideRecords { lines.append("  " + outsideRecordsLine(outside)) }
        if report.refused > 0 {
            lines.append("  \(Format.count(report.refused)) record(s) over the size or depth limit (--max-record-size, --max-depth), "
                + "written as rows an import rejects with the reason")
        }
        lines.append("  manifest: \(directory)/\(SplitManifest.fileName)")
        return lines.joined(separator: "\n")
    }
}
