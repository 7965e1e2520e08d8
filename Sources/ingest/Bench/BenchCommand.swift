import Foundation
import ArgumentParser
import IngestJSON

extension Ingest {
    struct Bench: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Measure throughput and memory (build with -c release first: ./run.sh does).",
            discussion: "Example: ingest bench import --runs 3",
            subcommands: [BenchSplit.self, BenchStore.self, BenchFetch.self, BenchImport.self, BenchHierarchy.self, BenchStoreRun.self]
        )
    }

    struct BenchSplit: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "split",
            abstract: "Split a generated feed and compare with yajl's json_verify on the same file.",
            discussion: """
            Generates (or reuses) feeds of --small-records and --records records in --work-dir, \
            then times json_verify (parse only) and `ingest split` on each, --runs times, each \
            in its own process, and prints the best run: MB/s, records/s and peak RSS.

            Example:
              ingest bench split --records 1000000 --runs 3
            """
        )

        @OptionGroup var feeds: BenchFeedOptions

        @Option(help: "Timed runs of each command.")
        var runs = 5

        var records: Int { feeds.records }
        var smallRecords: Int { feeds.smallRecords }
        var workDirectory: String { feeds.workDirectory }
        var feedStyle: FeedGenerator.Style { feeds.feedStyle }


        func validate() throws {
            if runs < 1 { throw ValidationError("--runs must be at least 1") }
        }

        func run() throws {
            try FileOpsCLI.makeDirectory(workDirectory)
            let verify = ChildProcess.find("json_verify")
            if verify == nil {
                Console.error("json_verify not found: install yajl-tools (apt-get install yajl-tools) for the reference rate\n")
            }
            let me = ChildProcess.currentExecutable
            var rows: [[String]] = []
            var notes: [String] = []
            var rss: [Int] = []
            for count in [smallRecords, records] {
                let (feed, bytes) = try Self.generatedFeed(records: count, in: workDirectory, style: feedStyle, repeatKeys: feeds.repeatKeys)
                // Alternate the two commands so that drift in the machine's speed hits both alike.
                var verifyRuns: [ChildProcess.Result] = []
                var splitRuns: [ChildProcess.Result] = []
                for _ in 0..<runs {
                    if let verify { verifyRuns.append(try checked(ChildProcess.run(verify, ["-q"], standardInput: feed))) }
                    splitRuns.append(try checked(ChildProcess.run(
                        me, ["split", feed, "--out", "\(workDirectory)/chunks-\(count)", "--force", "--quiet"])))
                }
                if !verifyRuns.isEmpty { rows.append(row("json_verify (parse only)", count, bytes, verifyRuns)) }
                rows.append(row("ingest split", count, bytes, splitRuns))
                rss.append(splitRuns.map(\.peakRSSBytes).max()!)
                if !verifyRuns.isEmpty {
                    let best = 100 * Self.best(verifyRuns) / Self.best(splitRuns)
                    let median = 100 * Self.median(verifyRuns) / Self.median(splitRuns)
                    notes.append("\(Format.count(count)) records: split runs at \(Format.fixed(best, places: 0))% of json_verify's rate"
                        + " (best runs), \(Format.fixed(median, places: 0))% (median runs)")
                }
            }
            print(Table.render(header: ["command", "records", "MB", "best s", "median s", "MB/s", "records/s", "peak RSS"], rows: rows))
            notes.forEach { print($0) }
            if rss.count == 2 {
                let change = 100 * Double(rss[1] - rss[0]) / Double(rss[0])
                print("peak RSS \(Format.count(smallRecords)) → \(Format.count(records)) records: \(change >= 0 ? "+" : "")\(Format.fixed(change, places: 1))%")
            }
            print("MB/s and records/s from the best of \(runs) runs; each run is its own process.")
        }

        private func checked(_ result: ChildProcess.Result) throws -> ChildProcess.Result {
            guard result.status == 0 else { throw CommandFailure("a benchmark run failed with exit status \(result.status)") }
            return result
        }

        /// The generated feed of `records` records in `directory` (made once, then reused),
        /// its size, and the page cache warmed with it.
        static func generatedFeed(records: Int, in directory: String, style: FeedGenerator.Style,
                                  repeatKeys: Int = 1) throws -> (path: String, bytes: Int) {
            // The classic feed keeps the name it always had, so feeds made before are reused.
            let repeats = repeatKeys > 1 ? "repeat\(repeatKeys)-" : ""
            let feed = "\(directory)/photos-\(style == .classic ? "" : style.rawValue + "-")\(repeats)\(records).json"
            if !FileOpsCLI.exists(feed) {
                Console.error("generating \(feed)…\n")
                try FeedGenerator(records: records, style: style, repeatKeys: repeatKeys).write(to: feed)
            }
            _ = try ChildProcess.run("/bin/cat", [feed])
            return (feed, try FileOpsCLI.size(feed))
        }

        static func best(_ runs: [ChildProcess.Result]) -> Double { runs.map(\.seconds).min()! }

        static func median(_ runs: [ChildProcess.Result]) -> Double {
            let sorted = runs.map(\.seconds).sorted()
            return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }

        private func row(_ name: String, _ records: Int, _ bytes: Int, _ runs: [ChildProcess.Result]) -> [String] {
            let best = Self.best(runs)
            return [name, Format.count(records), Format.fixed(Double(bytes) / 1e6, places: 1), Format.fixed(best, places: 3),
                    Format.fixed(Self.median(runs), places: 3), Format.fixed(Double(bytes) / 1e6 / best, places: 1),
                    Format.count(Int(Double(records) / best)), ByteCount.format(runs.map(\.peakRSSBytes).max()!)]
        }
    }
}

/// A plain-text table with right-aligned numbers, for benchmark output and the README.
