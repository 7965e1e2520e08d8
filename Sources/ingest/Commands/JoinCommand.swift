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
    struct Join: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Join the running import of a PostgreSQL store: claim its chunks and import them, from any machine.",
            discussion: """
            `ingest import FEED --store postgresql://…` splits a feed into chunks registered in \
            the database and starts importing them; any number of `ingest join` processes, on this \
            machine or others that reach the database, import the same run beside it (the \
            importing process stores chunks in the database for them as they need them; when it \
            is gone, a process that can read the feed stores the rest). A worker \
            claims a chunk with SELECT … FOR UPDATE SKIP LOCKED and holds it with a heartbeat: \
            the chunks of a process that dies go back to the pool when its lease ends, and go on \
            from their markers. Exits when no chunk is left. Exit statuses as for ingest import.

            Example:
              ingest join postgresql://ingest@db.example.com/photos --workers 4
            """
        )

        @Argument(help: ArgumentHelp("The store: a PostgreSQL URL (libpq's; PG* variables and ~/.pgpass apply).", valueName: "url"))
        var store: String

        @Option(name: .customLong("run"), help: "The run to join (default: the newest unfinished one).")
        var runNumber: Int?

        @Flag(name: .customLong("from-database"),
              help: "Read every chunk from the database, even where the importing process's chunk files can be read here (the same machine, or a shared file system: by default those are read from the files, checked against their checksums).")
        var fromDatabase = false

        @OptionGroup var running: RunOptions

        func run() throws {
            try RunBackends.open(store).join(run: runNumber, fromDatabase: fromDatabase, running)
        }
    }
}
