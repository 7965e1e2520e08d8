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
    /// Objects per entity after it (in the copy, before it was removed).
    public var countsAfter: [String: Int]

    /// The file holding the records the run would reject (nil when it would reject none).
    public var rejectsFile: String?
    /// What could not be removed of the copy (a database the server would not drop,
    /// say), for the user to remove; nil when all of it went.
    public var leftover: String? = nil
}

extension Importer {
    /// Runs an import on a copy of its store and says what the run would do: every record
    /// is read, mapped, validated against the model and weighed against the stored objects
    /// by the pipeline's update rules, as the real run would, and nothing of the store (its
    /// objects, runs, chunks, report or rejects file) is written. The records the run would
    /// reject go to `rejectsTo` (written only when there are some; an earlier dry run's
    /// file there is removed otherwise). `started` gets the importer once it is made, to
    /// cancel it (a signal): the copy is removed all the same.
    ///
    /// A SQLite store is copied whole (SQLite's online backup, consistent while another
    /// process writes the store) into a directory of its own beside the store, removed at
    /// the end: it needs as much free space there as the store takes. A PostgreSQL database
    /// is copied on its server (`CREATE DATABASE … TEMPLATE`, dropped at the end), which
    /// PostgreSQL allows only while no other session is connected to the database, and only
    /// to a role that may create databases.
    /// - Throws: `ImportError` when the copy cannot be made (saying why), and for what the
    ///   run on the copy throws (its message naming the store, not the copy; the feed's
    ///   `FeedError` as it is); `StoreError` when the store cannot be read; `IOError` when
    ///   the rejects file cannot be written.
    public static func dryRun(spec: PipelineSpec, options: Options, rejectsTo: String,
                              started: (Importer) -> Void = { _ in }) throws -> DryRunReport {
        var found = options.isPostgres
            ? try dryRunOnPostgres(spec: spec, options: options, rejectsTo: rejectsTo, started: started)
            : try dryRunOnSQLite(spec: spec, options: options, rejectsTo: rejectsTo, started: started)
        if found.rejectsFile == nil {
            try FileOps.removeRegularFile(rejectsTo)
            found.report.rejectsFile = ""
        }
        return found
    }

    /// The run on the copy at `copy`, its errors told of the store instead.
    private static func run(_ spec: PipelineSpec, _ onCopy: Options, copy: String, store: String,
                            started: (Importer) -> Void) throws -> ImportReport {
        let importer = Importer(spec: spec, options: onCopy)
        started(importer)
        do {
            var report = try importer.run()
            report.store = store
            return report
        } catch let error as FeedError {
            throw error
        } catch {
            let text = "\(error)"
            guard text.contains(copy) else { throw error }
            throw ImportError("dry run: " + text.replacingOccurrences(of: copy, with: store))
        }
    }

    @_optimize(none)
    private static func dryRunOnSQLite(spec: PipelineSpec, options: Options, rejectsTo: String,
                                       started: (Importer) -> Void) throws -> DryRunReport {
        let store = options.store
        try PersistentStoreCoordinator.checkIsStoreOrNew(at: store, writing: false)
        let countsBefore = FileOps.fileSize(store).map({ $0 > 0 }) == true ? try objectCounts(store: store) : [:]
        let parent = (store as NSString).deletingLastPathComponent
        var template = Array(((parent.isEmpty ? "." : parent) + "/.ingest-dry-run.XXXXXX").utf8CString)
        guard mkdtemp(&template) != nil else {
            throw ImportError("--dry-run: cannot make a directory beside \(store) for its copy: \(String(cString: strerror(errno)))")
        }
        let directory = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let copy = directory + "/" + (store as NSString).lastPathComponent
        try PersistentStoreCoordinator.copySQLiteStore(at: store, to: copy)
        var onCopy = options
        onCopy.store = copy
        onCopy.chunks = directory + "/chunks"
        onCopy.keepChunks = false
        onCopy.deleteStore = false
        onCopy.removesLeftoverChunks = false
        var report = try run(spec, onCopy, copy: copy, store: store, started: started)
        var rejectsFile: String?
        if report.rejectedThisRun > 0, let run = report.run {
            let lines = try String(contentsOfFile: copy + ".rejects.ndjson", encoding: .utf8).split(separator: "\n").filter {
                $0.hasPrefix("{\"run\":\(run),")
            }
            try FileOps.writeAtomically(Array((lines.joined(separator: "\n") + "\n").utf8), to: rejectsTo)
            rejectsFile = rejectsTo
            report.rejectsFile = rejectsTo
        }
        return DryRunReport(report: report, countsBefore: countsBefore, countsAfter: report.counts, rejectsFile: rejectsFile)
    }

    /// Objects per entity of the SQLite store at `store`, with or without runs.
    private static func objectCounts(store: String) throws -> [String: Int] {
        do {
            return try ImportStatus.read(store: store).counts
        } catch let error as ImportError where { if case .noImport = error.kind { true } else { false } }() {
            // A store no import wrote yet (a container's): its objects all the same.
            let coordinator = try PersistentStoreCoordinator(existingStoreAt: store, readOnly: true)
            var counts: [String: Int] = [:]
            for entity in coordinator.model.entities { counts[entity.name] = try coordinator.count(entity.name) }
            return counts
        }
    }

    @_optimize(none)
    private static func dryRunOnPostgres(spec: PipelineSpec, options: Options, rejectsTo: String,
                                         started: (Importer) -> Void) throws -> DryRunReport {
        let url = try PostgresURL(options.store)
        guard var components = URLComponents(string: options.store), !components.path.dropFirst().isEmpty else {
            throw ImportError("--dry-run on PostgreSQL needs the store as a postgresql://…/DATABASE URL naming its database (it copies that database)")
        }
        // libpq lets a query's dbname (or a service's) name another database than the path:
        // the copy would then be the store itself.
        if let other = components.queryItems?.first(where: { ["dbname", "service"].contains($0.name.lowercased()) }) {
            throw ImportError("--dry-run on PostgreSQL names the database in the URL's path only: remove ?\(other.name)=… from \(url)")
        }
        let source = String(components.path.dropFirst())
        let countsBefore = (try? ImportStatus.read(store: options.store).counts) ?? [:]
        var admin = components
        admin.path = "/postgres"
        let copyName = "ingest_dry_run_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        components.path = "/" + copyName
        let copyURL = try PostgresURL(components.string ?? "")
        guard copyURL.value(of: "dbname") == copyName else {
            throw ImportError("--dry-run: the copy's address \(copyURL) does not lead to the copy (\(copyName)): name the database in the URL's path only")
        }
        func quoted(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
        do {
            try PostgresConnection(try PostgresURL(admin.string ?? "")).execute("CREATE DATABASE \(quoted(copyName)) TEMPLATE \(quoted(source))")
        } catch {
            let text = "\(error)"
            if text.contains("being accessed by other users") {
                throw ImportError("--dry-run copies \(url) on its server (CREATE DATABASE … TEMPLATE \(source)), which PostgreSQL allows only while no other session is connected to \(source): run it when no import, join or ingest history --follow is connected (\(text))")
            }
            throw ImportError("--dry-run could not copy \(url) on its server (CREATE DATABASE … TEMPLATE \(source); the role needs CREATEDB): \(text)")
        }
        var leftover: String?
        // Dropped on a connection of its own, made now: the import may take hours.
        func drop() {
            do {
                try PostgresConnection(try PostgresURL(admin.string ?? "")).execute("DROP DATABASE IF EXISTS \(quoted(copyName)) WITH (FORCE)")
            } catch {
                leftover = "the dry run's copy of \(source) could not be dropped (\(error)): drop it with DROP DATABASE \(quoted(copyName)) WITH (FORCE)"
            }
        }
        var onCopy = options
        onCopy.store = components.string ?? ""
        let report: ImportReport
        var rejectsFile: String?
        var countsAfter: [String: Int] = [:]
        do {
            var made = try run(spec, onCopy, copy: copyName, store: source, started: started)
            made.store = url.description
            countsAfter = try ImportStatus.read(store: onCopy.store).counts
            if made.rejectedThisRun > 0, let run = made.run {
                let rows = try PostgresConnection(copyURL).execute("SELECT record FROM _ingest_rejects WHERE run = $1 ORDER BY chunk, index", [String(run)])
                var text = ""
                for row in 0..<rows.count {
                    let reject = try JSONDecoder().decode(ImportMarker.Reject.self, from: Data(try rows.text(row, 0).utf8))
                    text += reject.fileLine(run: run) + "\n"
                }
                try FileOps.writeAtomically(Array(text.utf8), to: rejectsTo)
                rejectsFile = rejectsTo
                made.rejectsFile = rejectsTo
            }
            report = made
        } catch {
            drop()
            throw error
        }
        drop()
        return DryRunReport(report: report, countsBefore: countsBefore, countsAfter: countsAfter, rejectsFile: rejectsFile, leftover: leftover)
    }
}
