import Foundation
import IngestJSON
import IngestStore

/// What a dry run found: the report the import would give, the store's objects before
/// it, and where the records it would reject were written.
public struct DryRunReport: Sendable {
    /// The run's report, made on the copy (its `store` names the store, not the copy).
    public var report: ImportReport
    /// Objects per entity in the store before the run (empty for a new store).
    public var countsBefore: [String: Int]
    /// The file holding the records the run would reject (nil when it would reject none).
    public var rejectsFile: String?
}

extension Importer {
    /// Runs an import on a copy of its SQLite store, made in a directory of its own beside
    /// the store and removed at the end, and says what the run would do: every record is
    /// read, mapped, validated against the model and weighed against the stored objects by
    /// the pipeline's update rules, as the real run would, and nothing of the store, its
    /// chunks, report or rejects file is written. The records the run would reject go to
    /// `rejectsTo` (written only when there are some).
    ///
    /// The copy is a whole copy (SQLite's online backup, consistent while another process
    /// writes the store): it needs as much free space beside the store as the store takes.
    /// - Throws: `ImportError` for a PostgreSQL store (not supported yet) or a read-once
    ///   feed; what `copySQLiteStore` and `run()` throw (a malformed feed, a full disk).
    public static func dryRun(spec: PipelineSpec, options: Options, rejectsTo: String) throws -> DryRunReport {
        guard !options.isPostgres else {
            throw ImportError("--dry-run works on SQLite stores for now; on PostgreSQL, import into a copy of the database (CREATE DATABASE copy TEMPLATE \(options.store.split(separator: "/").last.map(String.init) ?? "db"))")
        }
        let store = options.store
        try PersistentStoreCoordinator.checkIsStoreOrNew(at: store, writing: false)
        let countsBefore = FileOps.fileSize(store).map({ $0 > 0 }) == true ? (try ImportStatus.read(store: store).counts) : [:]
        let parent = (store as NSString).deletingLastPathComponent
        var template = Array(((parent.isEmpty ? "." : parent) + "/.ingest-dry-run.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw ImportError("--dry-run: cannot make a directory beside \(store) for its copy: \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let copy = directory + "/" + (store as NSString).lastPathComponent
        try PersistentStoreCoordinator.copySQLiteStore(at: store, to: copy)
        var onCopy = options
        onCopy.store = copy
        onCopy.chunks = directory + "/chunks"
        onCopy.keepChunks = false
        onCopy.deleteStore = false
        var report = try Importer(spec: spec, options: onCopy).run()
        report.store = store
        var rejectsFile: String?
        if report.rejectedThisRun > 0, let run = report.run {
            let lines = try String(contentsOfFile: copy + ".rejects.ndjson", encoding: .utf8).split(separator: "\n").filter {
                $0.hasPrefix("{\"run\":\(run),")
            }
            try FileOps.writeAtomically(Array((lines.joined(separator: "\n") + "\n").utf8), to: rejectsTo)
            rejectsFile = rejectsTo
        }
        report.rejectsFile = rejectsFile ?? ""
        return DryRunReport(report: report, countsBefore: countsBefore, rejectsFile: rejectsFile)
    }
}
