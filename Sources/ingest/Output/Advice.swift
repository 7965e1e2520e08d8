import GRDB
import IngestJSON
import IngestPipeline
import IngestStore

/// What to type next, for the library errors whose way on is a command or a flag: the
/// libraries say what is wrong in their own terms, and the command line says what to do.
enum Advice {
    static func advice(for error: any Error) -> String? {
        switch error {
        case let error as ImportError:
            switch error.kind {
            case .unfinishedRun(let store, let run, let feed, _) where FileOps.isReadOnce(feed) || feed == "-":
                return "Continue it by piping its feed in again with the pipeline and chunk size it started with: … | ingest import - --pipeline PIPELINE --store \(store); or pass --abandon-run to leave run \(run) as it is (what it imported stays) and import this feed as run \(run + 1)"
            case .unfinishedRun(let store, let run, _, let reasons) where reasons.contains { $0.hasPrefix("the pipeline") }:
                // resume goes on with the pipeline file the run started with: as it was, not as edited.
                return "Continue it with the pipeline it started with (put the file back as it was): ingest resume \(store); or pass --abandon-run to leave run \(run) as it is (what it imported stays) and import with this pipeline as run \(run + 1)"
            case .unfinishedRun(let store, let run, _, _):
                return "Continue it with: ingest resume \(store); or pass --abandon-run to leave run \(run) as it is (what it imported stays) and import this feed as run \(run + 1)"
            case .tooManyRejects(_, _, let rejectsFile):
                let store = rejectsFile.hasSuffix(".rejects.ndjson") ? String(rejectsFile.dropLast(".rejects.ndjson".count)) : "STORE"
                return "raise --max-rejects and run ingest resume \(store) to go on"
            case .chunkChanged:
                return "delete it and run ingest resume to make it again from the feed"
            case .storeBusy(let store, _):
                return "wait for it or stop it — ingest status \(store) shows its progress"
            case .alreadyImported:
                return "pass --again to import it anyway"
            case .feedUnreadable, .noImport, .other:
                return nil
            }
        case let error as SplitError:
            switch error {
            case .differentFeed: return "choose another --out directory, or pass --force to split this feed into it from the start"
            case .unknownChunks: return "choose another --out directory, or pass --force to replace them"
            case .feedChanged, .unreadableState: return "pass --force to split it again from the start"
            case .interrupted: return "run the same command again to continue"
            case .invalidOption, .chunksMissing: return nil
            }
        case StoreError.database(_, let code?):
            return sqliteAdvice(code)
        case StoreError.modelMismatch:
            // SQLite migrates additions in place (optional attributes, relationships).
            return "import into a new store, or pass --delete-store to start this one over (everything it holds is deleted); a pipeline that only adds optional attributes or relationships opens it as it is"
        case StoreError.postgres(.modelMismatch), PostgresError.modelMismatch:
            return "import into another database (or schema: ?options=-csearch_path%3Dname), or drop this one's tables to start over"
        case let error as FeedError where error.kind == .notAnArray || error.kind == .keyPathNotFound:
            return "the shape is set by --records-at KEY, --keyed or --ndjson for split and infer, and by the pipeline's \"feed\" for import"
        default:
            return nil
        }
    }

    /// The way on from a SQLite result code (by its primary code).
    static func sqliteAdvice(_ code: ResultCode) -> String? {
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

    /// `error`'s message with its advice, as the command line prints it.
    static func message(_ error: any Error) -> String {
        guard let advice = advice(for: error) else { return "\(error)" }
        let text = "\(error)"
        // A feed error ends with its excerpt: the advice goes on the first line.
        if let newline = text.firstIndex(of: "\n") {
            return text[..<newline] + " (" + advice + ")" + text[newline...]
        }
        // A sentence of its own after an import's reasons; a clause after the splitter's and the store's.
        return error is ImportError ? text + ". " + advice.prefix(1).uppercased() + advice.dropFirst() : text + "; " + advice
    }
}
