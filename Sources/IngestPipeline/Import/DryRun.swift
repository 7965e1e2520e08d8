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
    /// Runs an import on a copy of its store and says what the run would do: every record
    /// is read, mapped, validated against the model and weighed against the stored objects
    /// by the pipeline's update rules, as the real run would, and nothing of the store (its
    /// objects, runs, chunks, report or rejects file) is written. The records the run would
    /// reject go to `rejectsTo` (written only when there are some).
    ///
    /// A SQLite store is copied whole (SQLite's online backup, consistent while another
    /// process writes the store) into a directory of its own beside the store, removed at
    /// the end: it needs as much free space there as the store takes. A PostgreSQL database
    /// is copied on its server (`CREATE DATABASE … TEMPLATE`, dropped at the end), which
    /// PostgreSQL allows only while no other session is connected to the database, and only
    /// to a role that may create databases.
    /// - Throws: `ImportError` when the copy cannot be made (saying why); what
    ///   `copySQLiteStore` and `run()` throw (a malformed feed, a full disk).
    public static func dryRun(spec: PipelineSpec, options: Options, rejectsTo: String) throws -> DryRunReport {
        if options.isPostgres { return try dryRunOnPostgres(spec: spec, options: options, rejectsTo: rejectsTo) }
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

    private static func dryRunOnPostgres(spec: PipelineSpec, options: Options, rejectsTo: String) throws -> DryRunReport {
        let url = try PostgresURL(options.store)
        guard var components = URLComponents(string: options.store), !components.path.dropFirst().isEmpty else {
            throw ImportError("--dry-run on PostgreSQL needs the store as a postgresql://…/DATABASE URL naming its database (it copies that database)")
        }
        let source = String(components.path.dropFirst())
        // Made only to read the counts of a store that has none yet: an empty database is a new store.
        let countsBefore = (try? ImportStatus.read(store: options.store).counts) ?? [:]
        var admin = components
        admin.path = "/postgres"
        let server = try PostgresConnection(try PostgresURL(admin.string ?? ""))
        let copyName = "ingest_dry_run_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        func quoted(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
        do {
            try server.execute("CREATE DATABASE \(quoted(copyName)) TEMPLATE \(quoted(source))")
        } catch {
            let text = "\(error)"
            if text.contains("being accessed by other users") {
                throw ImportError("--dry-run copies \(url) on its server (CREATE DATABASE … TEMPLATE \(source)), which PostgreSQL allows only while no other session is connected to \(source): run it when no import, join or ingest history --follow is connected (\(text))")
            }
            throw ImportError("--dry-run could not copy \(url) on its server (CREATE DATABASE … TEMPLATE \(source); the role needs CREATEDB): \(text)")
        }
        defer { _ = try? server.execute("DROP DATABASE IF EXISTS \(quoted(copyName)) WITH (FORCE)") }
        components.path = "/" + copyName
        var onCopy = options
        onCopy.store = components.string ?? ""
        var report = try Importer(spec: spec, options: onCopy).run()
        report.store = url.description
        var rejectsFile: String?
        if report.rejectedThisRun > 0, let run = report.run {
            let copy = try PostgresConnection(try PostgresURL(onCopy.store))
            let rows = try copy.execute("SELECT record FROM _ingest_rejects WHERE run = $1 ORDER BY chunk, index", [String(run)])
            var text = ""
            for row in 0..<rows.count {
                let reject = try JSONDecoder().decode(ImportMarker.Reject.self, from: Data(try rows.text(row, 0).utf8))
                text += reject.fileLine(run: run) + "\n"
            }
            try FileOps.writeAtomically(Array(text.utf8), to: rejectsTo)
            rejectsFile = rejectsTo
        }
        report.rejectsFile = rejectsFile ?? ""
        return DryRunReport(report: report, countsBefore: countsBefore, rejectsFile: rejectsFile)
    }
}
