import Foundation
import ArgumentParser
import IngestJSON

extension Ingest {
    struct Demo: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Generate a demo feed and split it (what `./run.sh` runs with no arguments)."
        )

        @Option(help: "Records in the demo feed.")
        var records = 20_000

        @Option(name: .customLong("dir"), help: "Directory for the demo feed and its chunks.")
        var directory = "demo"

        @Option(name: .customLong("chunk-size"), help: "Records per chunk file.")
        var chunkSize = SplitOptions.defaultChunkSize

        func validate() throws {
            if records < 0 { throw ValidationError("--records must be 0 or more") }
            if chunkSize < 1 { throw ValidationError("--chunk-size must be at least 1") }
        }

        func run() throws {
            let feed = directory + "/photos-\(records).json"
            let chunks = directory + "/chunks"
            print("Ingest demo")
            if FileOpsCLI.exists(feed) {
                print("1. feed: \(feed) (already generated)")
            } else {
                try FileOpsCLI.makeDirectory(directory)
                try FeedGenerator(records: records).write(to: feed)
                print("1. feed: generated \(Format.count(records)) Flickr-like photo records into \(feed)"
                    + " (\(Format.count(FeedGenerator.photographerPool(records: records))) photographers)")
            }
            let summary = try SplitRun(feed: feed, directory: chunks,
                                       options: SplitOptions(chunkSize: chunkSize, force: true), quiet: true).run()
            print("2. split: " + summary.replacingOccurrences(of: "\n  ", with: "\n   "))
            print("""
            Next: look at \(chunks)/chunk-000001.ndjson and \(chunks)/manifest.json, or split a feed of your own:
               ./run.sh split FEED --out DIR [--records-at KEY | --ndjson] [--chunk-size N]
            """)
        }
    }
}


enum FileOpsCLI {
    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    static func makeDirectory(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw CommandFailure("cannot create directory \(path): \(error.localizedDescription)")
        }
    }
}
