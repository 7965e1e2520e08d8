import ArgumentParser
import Foundation
import IngestJSON
import IngestPipeline
import IngestStore

/// What to type next, for the library errors whose way on is a command or a flag: the
/// libraries say what is wrong in their own terms, and the command line says what to do.
/// Advice shown for a command names only options that command takes (`ingest resume`
/// has no --force, so a damaged split is not answered with one).
enum Advice {
    /// The long options of the command an error is reported for (`--force`).
    struct Options {
        let names: Set<String>

        /// Read from the command's own definition, so advice follows its options as they change.
        init(of command: any ParsableCommand.Type) {
            var names: Set<String> = []
            // The argument parser's description of the command (what `--experimental-dump-help` prints).
            let dump = Data(command._dumpHelp().utf8)
            let info = (try? JSONSerialization.jsonObject(with: dump)) as? [String: Any]
            let arguments = (info?["command"] as? [String: Any])?["arguments"] as? [[String: Any]] ?? []
            for argument in arguments {
                for name in argument["names"] as? [[String: Any]] ?? [] where name["kind"] as? String == "long" {
                    if let long = name["name"] as? String { names.insert("--" + long) }
                }
            }
            self.names = names
        }

        func has(_ option: String) -> Bool { names.contains(option) }
    }

    static func advice(for error: any Error, options: Options) -> String? {
        switch error {
        case let error as ImportError:
            switch error.kind {
            case .unfinishedRun(let store, let run, let feed, let reasons):
                let abandon = options.has("--abandon-run")
                let asNewRun = reasons.contains { $0.hasPrefix("the pipeline") } ? "with this pipeline" : "this feed"
                let orAbandon = abandon ? "; or pass --abandon-run to leave run \(run) as it is (what it imported stays) and import \(asNewRun) as run \(run + 1)" : ""
                if FileOps.isReadOnce(feed) || feed == "-" {
                    return "Continue it by piping its feed in again with the pipeline and chunk size it started with: … | ingest import - --pipeline PIPELINE --store \(store)" + orAbandon
                }
                if reasons.contains(where: { $0.hasPrefix("the pipeline") }) {
                    // resume goes on with the pipeline file the run started with: as it was, not as edited.
                    return "Continue it with the pipeline it started with (put the file back as it was): ingest resume \(store)" + orAbandon
                }
                return "Continue it with: ingest resume \(store)" + orAbandon
            case .tooManyRejects(_, _, let rejectsFile):
                let store = rejectsFile.hasSuffix(".rejects.ndjson") ? String(rejectsFile.dropLast(".rejects.ndjson".count)) : "STORE"
                return "raise --max-rejects and run ingest resume \(store) to go on"
            case .chunkChanged:
                return "delete it and run ingest resume to make it again from the feed"
            case .storeBusy(let store, _):
                return "wait for it or stop it — ingest status \(store) shows its progress"
            case .alreadyImported:
                return options.has("--again") ? "pass --again to import it anyway" : nil
            case .feedUnreadable, .noImport, .other:
                return nil
            }
        case let error as SplitError:
            if options.has("--force") && options.has("--out") {
                switch error {
                case .differentFeed: return "choose another --out directory, or pass --force to split this feed into it from the start"
                case .unknownChunks: return "choose another --out directory, or pass --force to replace them"
                case .feedChanged, .unreadableState: return "pass --force to split it again from the start"
                case .interrupted: return "run the same command again to continue"
                case .invalidOption, .chunksMissing: return nil
                }
            }
            // An import's own chunk directory: the run splits its feed into it again.
            let another = options.has("--chunks") ? "choose another --chunks directory, or " : ""
            switch error {
            case .differentFeed(let directory, _), .unknownChunks(let directory, _), .feedChanged(let directory, _):
                return another + "delete \(directory) and run the same command again: the run splits its feed into it again"
            case .unreadableState(let path):
                let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
                return another + "delete \(directory) and run the same command again: the run splits its feed into it again"
            case .interrupted: return "run the same command again to continue"
            case .invalidOption, .chunksMissing: return nil
            }
        case StoreError.database(_, let code?):
            return sqliteAdvice(code)
        case StoreError.modelMismatch:
            guard options.has("--delete-store") else {
                return "ingest import into a new store, or with --delete-store to start this one over (everything it holds is deleted)"
            }
            // SQLite migrates additions in place (optional attributes, relationships).
            return "import into a new store, or pass --delete-store to start this one over (everything it holds is deleted); a pipeline that only adds optional attributes or relationships opens it as it is"
        case StoreError.postgres(.modelMismatch), PostgresError.modelMismatch:
            return "import into another database (or schema: ?options=-csearch_path%3Dname), or drop this one's tables to start over"
        case let error as FeedError where error.kind == .notAnArray || error.kind == .keyPathNotFound:
            let flags = options.has("--records-at") && options.has("--keyed") && options.has("--ndjson")
            // import takes the shape options only to infer a pipeline: one given says where the records are.
            if options.has("--pipeline") {
                return "the shape is set by the pipeline's \"feed\"" + (flags ? " (without --pipeline, by --records-at KEY, --keyed or --ndjson)" : "")
            }
            return flags ? "the shape is set by --records-at KEY, --keyed or --ndjson" : "the shape is set by the pipeline's \"feed\""
        default:
            return nil
        }
    }

    /// The way on from a SQLite result code (by its primary code).
    static func sqliteAdvice(_ code: SQLiteResultCode) -> String? {
        switch code.primaryResultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED: "another process holds the store's write lock; try again when it is done (ingest status shows imports)"
        case .SQLITE_READONLY: "the store is read-only here: check the permissions of the file, of its -wal and -shm files and of its directory"
        case .SQLITE_IOERR: "reading or writing the file failed in the disk or file system; check them, then run ingest status --check on the store"
        case .SQLITE_CORRUPT: "the file is damaged: ingest status --check says where; restore it from a copy, or import its feeds into a new store"
        case .SQLITE_CANTOPEN: "SQLite cannot open it: check that its directory exists and that you may write there (SQLite keeps -wal and -shm files beside it)"
        case .SQLITE_NOTADB: "it is not a SQLite database"
        default: nil
        }
    }

    /// `error`'s message with its advice for `command`, as the command line prints it.
    static func message(_ error: any Error, for command: any ParsableCommand.Type) -> String {
        guard let advice = advice(for: error, options: Options(of: command)) else { return "\(error)" }
        let text = "\(error)"
        // A feed error ends with its excerpt: the advice goes on the first line.
        if let newline = text.firstIndex(of: "\n") {
            return text[..<newline] + " (" + advice + ")" + text[newline...]
        }
        // A sentence of its own after an import's reasons; a clause after the splitter's and the store's.
        return error is ImportError ? text + ". " + advice.prefix(1).uppercased() + advice.dropFirst() : text + "; " + advice
    }
}
