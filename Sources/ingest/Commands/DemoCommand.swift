import Foundation
import ArgumentParser
import IngestJSON
import IngestPipeline
import IngestStore

extension Ingest {
    struct Demo: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Generate a demo feed, import it with Pipelines/photos.json, query it (what `./run.sh` runs).",
            discussion: "Example: ingest demo --records 50000 --workers 4"
        )

        @Option(help: "Records in the demo feed.")
        var records = 200_000

        @Option(name: .customLong("dir"), help: "Directory for the demo feed and its chunks.")
        var directory = "demo"

        @Option(help: ArgumentHelp("The store file.", valueName: "file"))
        var store = "demo.sqlite"

        @Option(help: ArgumentHelp("The pipeline file.", valueName: "file"))
        var pipeline = "Pipelines/photos.json"

        @Option(help: "Worker contexts.")
        var workers = 2

        func validate() throws {
            if records < 1 { throw ValidationError("--records must be at least 1") }
            if workers < 1 || workers > PipelineSpec.maxWorkers { throw ValidationError("--workers must be from 1 to \(PipelineSpec.maxWorkers)") }
        }

        func run() throws {
            let feed = directory + "/photos-\(records).json"
            print("Ingest demo")
            if FileOpsCLI.exists(feed) {
                print("1. feed: \(feed) (already generated)")
            } else {
                try FileOpsCLI.makeDirectory(directory)
                try FeedGenerator(records: records).write(to: feed)
                print("1. feed: generated \(Format.count(records)) Flickr-like photo records into \(feed)"
                    + " (\(Format.count(FeedGenerator.photographerPool(records: records))) photographers)")
            }
            let spec = try PipelineSpec.load(path: pipeline)
            print("2. import with \(pipeline), \(workers) workers, into \(store) (progress on stderr):")
            if FileOpsCLI.exists(store) { Console.error("ingest demo: deleting \(store), the demo's store from an earlier demo, to start afresh\n") }
            let importer = Importer(spec: spec, options: .init(feed: feed, store: store, chunks: directory + "/chunks",
                                                               workers: workers, deleteStore: true, pipelinePath: pipeline))
            try Import.run(importer, store: store, quiet: false)
            let coordinator = try PersistentStoreCoordinator(existingStoreAt: store, readOnly: true)
            let context = ObjectContext(coordinator: coordinator, name: "demo")
            let top = FetchRequest("Photo", predicate: try QueryPredicate(format: "whoTook.name BEGINSWITH[c] %@", "ana"),
                                   sortDescriptors: [FetchSortDescriptor("views", ascending: false)], fetchLimit: 3)
            let rows = try context.performAndWait {
                try context.fetchDictionaries(DictionaryFetch(top, properties: [.keyPath("title"), .keyPath("views"), .keyPath("whoTook.name")]))
            }
            print("3. the most viewed photos by photographers named Ana:")
            print("   ./run.sh query \(store) Photo --where \"whoTook.name BEGINSWITH[c] 'ana'\" --sort views:desc --limit 3 --fields title,views,whoTook.name")
            let table = Ingest.Query.render(rows, keys: ["title", "views", "whoTook.name"], as: .table)
            print(table.split(separator: "\n").map { "   " + $0 }.joined(separator: "\n"))
            // What a service following the store would have been given, by its history.
            var token: HistoryToken?
            var transactions = 0
            var changes = 0
            while true {
                let fetch = try coordinator.fetchHistory(after: token, limit: 200)
                transactions += fetch.transactions.count
                changes += fetch.transactions.reduce(0) { $0 + $1.changes.count }
                token = fetch.token
                if fetch.transactions.isEmpty { break }
            }
            print("4. its change history, as a service following the store gets it: \(Format.count(transactions)) transactions, "
                + "\(Format.count(changes)) changes; continue after \(token!)")
            print("   ./run.sh history \(store) --format table | head")
        }
    }
}
