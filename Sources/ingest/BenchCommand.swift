import ArgumentParser
import IngestJSON

extension Ingest {
    struct Bench: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Measure throughput and memory (build with -c release first: ./run.sh does).",
            subcommands: [BenchSplit.self]
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
            """
        )

        @Option(help: "Records in the large feed.")
        var records = 1_000_000

        @Option(name: .customLong("small-records"), help: "Records in the small feed (for the memory comparison).")
        var smallRecords = 100_000

        @Option(help: "Timed runs of each command; the fastest is reported.")
        var runs = 3

        @Option(name: .customLong("work-dir"), help: "Where feeds and chunks go.")
        var workDirectory = "/tmp/ingest-bench"

        func validate() throws {
            if records < 1 || smallRecords < 1 { throw ValidationError("record counts must be at least 1") }
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
            var ratios: [String] = []
            var rss: [Int] = []
            for count in [smallRecords, records] {
                let feed = "\(workDirectory)/photos-\(count).json"
                if !FileOpsCLI.exists(feed) {
                    Console.error("generating \(feed)…\n")
                    try FeedGenerator(records: count).write(to: feed)
                }
                let bytes = try FileOpsCLI.size(feed)
                _ = try ChildProcess.run("/bin/cat", [feed])  // warm the page cache
                var verifyBest: ChildProcess.Result?
                if let verify {
                    verifyBest = try best { try ChildProcess.run(verify, ["-q"], standardInput: feed) }
                    rows.append(row("json_verify (parse only)", count, bytes, verifyBest!))
                }
                let splitBest = try best {
                    try ChildProcess.run(me, ["split", feed, "--out", "\(workDirectory)/chunks-\(count)", "--force", "--quiet"])
                }
                rows.append(row("ingest split", count, bytes, splitBest))
                rss.append(splitBest.peakRSSBytes)
                if let verifyBest {
                    ratios.append("\(Format.count(count)) records: split runs at \(Format.fixed(100 * verifyBest.seconds / splitBest.seconds, places: 0))% of json_verify's rate")
                }
            }
            print(Table.render(header: ["command", "records", "MB", "seconds", "MB/s", "records/s", "peak RSS"], rows: rows))
            ratios.forEach { print($0) }
            if rss.count == 2 {
                let change = 100 * Double(rss[1] - rss[0]) / Double(rss[0])
                print("peak RSS \(Format.count(smallRecords)) → \(Format.count(records)) records: \(change >= 0 ? "+" : "")\(Format.fixed(change, places: 1))%")
            }
        }

        private func best(_ body: () throws -> ChildProcess.Result) throws -> ChildProcess.Result {
            var results: [ChildProcess.Result] = []
            for _ in 0..<runs {
                let result = try body()
                guard result.status == 0 else { throw CommandFailure("a benchmark run failed with exit status \(result.status)") }
                results.append(result)
            }
            return results.min { $0.seconds < $1.seconds }!
        }

        private func row(_ name: String, _ records: Int, _ bytes: Int, _ result: ChildProcess.Result) -> [String] {
            [name, Format.count(records), Format.fixed(Double(bytes) / 1e6, places: 1), Format.fixed(result.seconds, places: 3),
             Format.fixed(Double(bytes) / 1e6 / result.seconds, places: 1),
             Format.count(Int(Double(records) / result.seconds)), ByteCount.format(result.peakRSSBytes)]
        }
    }
}

/// A plain-text table with right-aligned numbers, for benchmark output and the README.
enum Table {
    static func render(header: [String], rows: [[String]]) -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            "| " + cells.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                return column == 0 ? cell + pad : pad + cell
            }.joined(separator: " | ") + " |"
        }
        let rule = "|" + widths.enumerated().map { column, width in
            column == 0 ? String(repeating: "-", count: width + 2) : String(repeating: "-", count: width + 1) + ":"
        }.joined(separator: "|") + "|"
        return ([line(header), rule] + rows.map(line)).joined(separator: "\n")
    }
}

extension FileOpsCLI {
    static func size(_ path: String) throws -> Int {
        guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int else {
            throw CommandFailure("cannot read the size of \(path)")
        }
        return size
    }
}

import Foundation
