import ArgumentParser
import Dispatch
import Foundation
import IngestJSON
import IngestPipeline
import IngestStore

extension Ingest {
    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the changes saved to a store, from any process, after a token (its persistent history).",
            discussion: """
            Each line is one object's change, with the token to continue from after its save;
            the last line (without --follow) is the token after everything printed.

            Examples:
              ingest history photos.sqlite
              ingest history photos.sqlite --since 1042@6f1c2a3e-… --format table
              ingest history "postgresql://me@db/photos" --follow
              ingest history photos.sqlite --purge-before 1042@6f1c2a3e-…
            """
        )

        @Argument(help: "The store file, or a postgresql:// URL.")
        var store: String

        @Option(help: ArgumentHelp("Print the changes after this token (default: from the oldest kept).", valueName: "token"))
        var since: String?

        @Flag(help: "Keep printing changes as other processes save them, until interrupted.")
        var follow = false

        @Option(help: "ndjson (one change a line), json (one document) or table.")
        var format: OutputFormat = .ndjson

        @Option(help: ArgumentHelp("Delete the history before this token, then stop (a consumer behind it is refused after).", valueName: "token"))
        var purgeBefore: String?

        @Option(help: ArgumentHelp("With --follow: how often to check for saves, in milliseconds, at most 86400000 (PostgreSQL is woken by NOTIFY at once).", valueName: "ms"))
        var interval = 100

        /// The longest --interval: a day. Longer waits only ever come from a typo.
        static let maximumInterval = 86_400_000

        enum OutputFormat: String, ExpressibleByArgument, CaseIterable { case ndjson, json, table }

        func validate() throws {
            if let since, HistoryToken(since) == nil { throw ValidationError("--since '\(since)' is not a history token (POSITION@STORE-ID, as this command prints)") }
            if let purgeBefore, HistoryToken(purgeBefore) == nil {
                throw ValidationError("--purge-before '\(purgeBefore)' is not a history token (POSITION@STORE-ID, as this command prints)")
            }
            if follow && format == .json { throw ValidationError("--follow prints changes as they come: use --format ndjson or table") }
            if purgeBefore != nil && (follow || since != nil) { throw ValidationError("--purge-before only purges: leave out --since and --follow") }
            if interval < 1 { throw ValidationError("--interval must be at least 1 ms") }
            if interval > Self.maximumInterval { throw ValidationError("--interval must be at most \(Self.maximumInterval) ms (24 hours)") }
        }

        func run() throws {
            if let purgeBefore, let token = HistoryToken(purgeBefore) {
                let coordinator = try PersistentStoreCoordinator(existingStoreAt: store)
                try coordinator.purgeHistory(before: token)
                print("purged the history before \(token)")
                return
            }
            let coordinator = try PersistentStoreCoordinator(existingStoreAt: store, readOnly: true)
            var token = since.flatMap(HistoryToken.init)
            if format == .table { print(Self.tableHeader) }
            if follow {
                try followHistory(coordinator, after: token)
                return
            }
            var all: [String] = []
            while true {
                let fetch = try coordinator.fetchHistory(after: token, limit: 1_000)
                for transaction in fetch.transactions {
                    for change in transaction.changes {
                        if format == .json { all.append(Self.json(change, of: transaction)) } else { print(line(change, of: transaction)) }
                    }
                }
                token = fetch.token
                if fetch.transactions.count < 1_000 { break }
            }
            switch format {
            case .json: print("{\"changes\":[" + all.joined(separator: ",\n ") + "],\n \"token\":\(Query.jsonString(token!.description))}")
            case .ndjson: print("{\"token\":\(Query.jsonString(token!.description))}")
            case .table: print("token: \(token!)")
            }
        }

        /// Prints each transaction as it comes, until the process is interrupted.
        private func followHistory(_ coordinator: PersistentStoreCoordinator, after token: HistoryToken?) throws {
            let done = DispatchSemaphore(value: 0)
            let failure = Locked<String?>(nil)
            let format = format
            let interval = Duration.milliseconds(interval)
            Task.detached {
                do {
                    for try await transaction in coordinator.history(after: token, interval: interval) {
                        for change in transaction.changes {
                            print(format == .table ? Self.tableLine(change, of: transaction) : Self.json(change, of: transaction))
                        }
                        fflush(nil)
                    }
                } catch {
                    failure.withLock { $0 = "\(error)" }
                }
                done.signal()
            }
            done.wait()
            if let error = failure.withLock({ $0 }) { throw CommandFailure(error) }
        }

        private func line(_ change: HistoryChange, of transaction: HistoryTransaction) -> String {
            format == .table ? Self.tableLine(change, of: transaction) : Self.json(change, of: transaction)
        }

        static func json(_ change: HistoryChange, of transaction: HistoryTransaction) -> String {
            var fields = [
                "\"position\":\(transaction.position)",
                "\"time\":\(Query.jsonString(Format.date(transaction.timestamp)))",
                "\"author\":\(Query.jsonString(transaction.author))",
                "\"process\":\(Query.jsonString(transaction.process))",
                "\"kind\":\"\(change.kind.rawValue)\"",
                "\"entity\":\(Query.jsonString(change.entity))",
                "\"row\":\(change.objectID.primaryKey ?? 0)",
                "\"id\":\(Query.jsonString(change.objectID.uri))",
            ]
            if change.kind == .update { fields.append("\"properties\":[" + change.updatedProperties.map(Query.jsonString).joined(separator: ",") + "]") }
            if change.kind == .delete {
                fields.append("\"tombstone\":{" + change.tombstone.sorted { $0.key < $1.key }
                    .map { Query.jsonString($0.key) + ":" + Query.json($0.value) }.joined(separator: ",") + "}")
            }
            fields.append("\"token\":\(Query.jsonString(transaction.token.description))")
            return "{" + fields.joined(separator: ",") + "}"
        }

        static let tableHeader = pad("position", 12) + pad("time", 29) + pad("author", 28) + pad("kind", 8) + pad("entity", 16) + pad("row", 12) + "properties / tombstone"

        static func tableLine(_ change: HistoryChange, of transaction: HistoryTransaction) -> String {
            let detail = change.kind == .update ? change.updatedProperties.joined(separator: ",")
                : change.tombstone.sorted { $0.key < $1.key }.map { "\($0.key)=\(Query.plain($0.value, null: "NULL"))" }.joined(separator: ",")
            return pad(String(transaction.position), 12) + pad(Format.date(transaction.timestamp), 29) + pad(transaction.author, 28)
                + pad(change.kind.rawValue, 8) + pad(change.entity, 16) + pad(String(change.objectID.primaryKey ?? 0), 12) + detail
        }

        private static func pad(_ text: String, _ width: Int) -> String {
            text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
        }
    }
}
