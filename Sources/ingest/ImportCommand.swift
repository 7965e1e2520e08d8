import ArgumentParser
import Foundation
import IngestJSON
import IngestPipeline
import IngestStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

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

        @Option(name: .customLong("max-rejects"), help: "Stop (resumably) once more than this many records are rejected.")
        var maxRejects: Int?

        @Flag(name: .customLong("keep-indexes"), help: "Keep secondary indexes during the import (default: build them at the end).")
        var keepIndexes = false

        @Flag(help: "Print nothing but errors.")
        var quiet = false

        func validate() throws {
            for (name, value) in [("--workers", workers), ("--save-every", saveEvery), ("--chunk-size", chunkSize)] {
                if let value, value < 1 { throw ValidationError("\(name) must be at least 1") }
            }
            if let maxRejects, maxRejects < 0 { throw ValidationError("--max-rejects must be 0 or more") }
        }

        func run() throws {
            let spec = try PipelineSpec.load(path: pipeline)
            let importer = Importer(spec: spec, options: .init(feed: feed, store: store, chunks: chunks, workers: workers,
                                                              saveEvery: saveEvery, chunkSize: chunkSize, restart: restart,
                                                              maxRejects: maxRejects, keepIndexes: keepIndexes,
                                                              pipelinePath: pipeline))
            try Self.run(importer, store: store, quiet: quiet)
        }

        /// Runs an import with SIGINT, SIGTERM and SIGHUP stopping it at the next save boundary
        /// (exit 130, 143, 129).
        static func run(_ importer: Importer, store: String, quiet: Bool) throws {
            let received = Atomic<Int32>(0)
            var sources: [any DispatchSourceSignal] = []
            for signalNumber in [SIGINT, SIGTERM, SIGHUP] {
                signal(signalNumber, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
                source.setEventHandler {
                    received.store(signalNumber, ordering: .relaxed)
                    importer.cancellation.store(true, ordering: .relaxed)
                }
                source.resume()
                sources.append(source)
            }
            defer { sources.forEach { $0.cancel() } }
            let view = ImportProgressView()
            if !quiet { importer.addProgressObserver { view.show($0) } }
            let report: ImportReport
            do {
                report = try importer.run()
                view.finish()
            } catch is ImportInterrupted {
                view.finish()
                let signalNumber = received.load(ordering: .relaxed)
                let name = signalNumber == SIGTERM ? "SIGTERM" : signalNumber == SIGHUP ? "SIGHUP" : "SIGINT"
                Console.error("ingest: stopped at a save boundary (\(name)); continue with: ingest resume \(store)\n")
                Glibc.exit(128 + signalNumber)
            } catch {
                view.finish()
                throw error
            }
            guard !quiet else { return }
            printSummary(report, reportPath: importer.reportPath)
            let chunks = importer.options.chunks ?? store + ".chunks"
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: chunks) {
                print("  chunks: \(chunks) is a symbolic link; the chunk files are in \(target)")
            }
        }

        static func printSummary(_ report: ImportReport, reportPath: String) {
            print("\(report.feed) → \(report.store): \(Format.count(report.records)) records in \(report.chunks) chunk(s), \(report.workers) worker(s)")
            print("  imported \(Format.count(report.imported)) and rejected \(Format.count(report.rejectedThisRun)) this run; \(Format.count(report.rejected)) rejected in all (\(report.rejectsFile))")
            if let outcomes = report.outcomes {
                print("  records: \(Format.count(outcomes.inserted)) inserted, \(Format.count(outcomes.updated)) updated, \(Format.count(outcomes.unchanged)) unchanged"
                      + (outcomes.duplicates > 0 ? " (\(Format.count(outcomes.duplicates)) repeated a key seen earlier in this run)" : ""))
            }
            print("  " + report.counts.sorted { $0.key < $1.key }.map { "\($0.key): \(Format.count($0.value))" }.joined(separator: ", "))
            print("  \(Format.seconds(report.seconds)), \(Format.count(Int(report.recordsPerSecond))) records/s, \(Format.rate(report.megabytesPerSecond)) MB/s, peak RSS \(ByteCount.format(report.peakRSSBytes))")
            let stages = report.stages
            print("  stages: split \(Format.seconds(stages.split)) (alongside), parse \(Format.seconds(stages.parse)), map \(Format.seconds(stages.map)), save \(Format.seconds(stages.save)) (summed over workers), indexes \(Format.seconds(stages.index))")
            if !report.remadeChunks.isEmpty {
                print("  made again from the feed (changed or missing since the split): " + report.remadeChunks.joined(separator: ", "))
            }
            if let stale = report.staleLock { print("  took over the lock file left by a run that is gone (\(stale))") }
            print("  report: \(reportPath)")
        }
    }

    struct Resume: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Continue a stopped import, with the feed, pipeline and chunks the store records."
        )

        @Argument(help: "The store file.")
        var store: String

        @Option(help: "Worker contexts.")
        var workers: Int?

        @Option(name: .customLong("max-rejects"), help: "Stop (resumably) once more than this many records are rejected.")
        var maxRejects: Int?

        @Flag(help: "Print nothing but errors.")
        var quiet = false

        func run() throws {
            let status = try ImportStatus.read(store: store)
            guard let feed = status.feed, let pipeline = status.pipeline else {
                throw CommandFailure("\(store) does not record its feed and pipeline paths; run ingest import again instead")
            }
            let spec = try PipelineSpec.load(path: pipeline)
            let importer = Importer(spec: spec, options: .init(feed: feed, store: store, chunks: status.chunks, workers: workers,
                                                              saveEvery: status.saveEvery, chunkSize: status.chunkSize,
                                                              maxRejects: maxRejects, pipelinePath: pipeline))
            try Import.run(importer, store: store, quiet: quiet)
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Where an import into a store stands (works while it runs).")

        @Argument(help: "The store file.")
        var store: String

        @Flag(help: "Also check the store: SQLite's integrity check, to-ones, uniqueness, and the marker against the rows (exit 1 on a problem).")
        var check = false

        func run() throws {
            if check {
                let problems = try ImportStatus.check(store: store)
                if problems.isEmpty {
                    print("\(store): check passed (SQLite integrity, to-one references, uniqueness, import marker)")
                } else {
                    print("\(store): check found \(problems.count) problem(s):")
                    problems.forEach { print("  - " + $0) }
                }
                if !problems.isEmpty { throw ExitCode(1) }
                return
            }
            let status = try ImportStatus.read(store: store)
            print("\(store): \(status.finished ? "import finished" : "import not finished")")
            let total = status.chunkCount.map(String.init) ?? "? (the split has not finished)"
            print("  chunks: \(status.chunksComplete) of \(total) complete; records done: \(Format.count(status.recordsDone)); rejected: \(Format.count(status.rejected))")
            print("  " + status.counts.sorted { $0.key < $1.key }.map { "\($0.key): \(Format.count($0.value))" }.joined(separator: ", "))
            if let feed = status.feed { print("  feed: \(feed)") }
            if let pipeline = status.pipeline { print("  pipeline: \(pipeline)") }
            if status.indexesDeferred { print("  secondary indexes: dropped until the import finishes (queries work, slower)") }
        }
    }
}
