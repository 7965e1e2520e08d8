import Foundation

/// DuckDB's fastest form of the bench's load, beside the C importer and the sqlite3 CLI:
/// `read_json` of the feed into a staging table, then the same two tables with their keys
/// (the photographers, each with its last record's name as Ingest's default update rule
/// keeps; then the photos linked to them, a repeated photo kept once, as its last record
/// has it), in a DuckDB file of its own. Through the `duckdb` CLI, or the Python package
/// when only that is installed (its peak RSS then includes the interpreter's, about 10 MB).
struct DuckDBLoad {
    enum Runner {
        case cli(String)
        case python(String)
    }

    let runner: Runner
    let threads: Int

    /// The installed DuckDB, CLI first; nil when there is none.
    static func find(threads: Int) -> DuckDBLoad? {
        if let cli = ChildProcess.find("duckdb") { return DuckDBLoad(runner: .cli(cli), threads: threads) }
        if let python = ChildProcess.find("python3"), (try? ChildProcess.run(python, ["-c", "import duckdb"]))?.status == 0 {
            return DuckDBLoad(runner: .python(python), threads: threads)
        }
        return nil
    }

    /// Why the bench has no DuckDB row, and how to get one.
    static let missingNote = "DuckDB not found: install its CLI, or its Python package (pip install duckdb), for DuckDB's rate\n"

    var name: String {
        switch runner {
        case .cli: "DuckDB read_json (CLI)"
        case .python: "DuckDB read_json (Python)"
        }
    }

    /// Loads `feed` into a new DuckDB file `store` (removed first, with its WAL).
    /// - Throws: `CommandFailure` when DuckDB cannot be started or the script cannot be written.
    func run(feed: String, store: String, workDirectory: String) throws -> ChildProcess.Result {
        for suffix in ["", ".wal"] { try? FileManager.default.removeItem(atPath: store + suffix) }
        let script = "\(workDirectory)/duckdb-load.sql"
        try FileOpsCLI.write(sql(feed: feed), to: script)
        switch runner {
        case .cli(let cli):
            return try ChildProcess.run(cli, [store], standardInput: script)
        case .python(let python):
            return try ChildProcess.run(python, ["-c", "import duckdb, sys; duckdb.connect(sys.argv[1]).execute(open(sys.argv[2]).read())",
                                                 store, script])
        }
    }

    /// Every field is read as text (a feed may write a number as a string) and cast where
    /// the column is a number; a value that is no number is NULL, as the C importer leaves it.
    func sql(feed: String) -> String {
        let quotedFeed = feed.replacingOccurrences(of: "'", with: "''")
        return """
        SET threads = \(threads);
        SET enable_progress_bar = false;
        SET preserve_insertion_order = false;
        CREATE TABLE "Photographer" ("_pk" BIGINT PRIMARY KEY, "id" VARCHAR NOT NULL UNIQUE, "name" VARCHAR);
        CREATE TABLE "Photo" ("_pk" BIGINT PRIMARY KEY, "id" VARCHAR NOT NULL UNIQUE, "title" VARCHAR, "subtitle" VARCHAR,
            "photoURL" VARCHAR, "thumbnailURL" VARCHAR, "uploadDate" VARCHAR, "views" BIGINT,
            "latitude" DOUBLE, "longitude" DOUBLE, "_whoTook" BIGINT REFERENCES "Photographer" ("_pk"));
        CREATE TEMP TABLE staging AS SELECT row_number() OVER () AS n, * FROM read_json('\(quotedFeed)', format = 'array',
            maximum_object_size = 67108864,
            columns = {id: 'VARCHAR', title: 'VARCHAR', subtitle: 'VARCHAR', photoURL: 'VARCHAR', thumbnailURL: 'VARCHAR',
                       uploadDate: 'VARCHAR', views: 'VARCHAR', latitude: 'VARCHAR', longitude: 'VARCHAR',
                       photographer: 'STRUCT(id VARCHAR, name VARCHAR)'});
        INSERT INTO "Photographer"
        SELECT row_number() OVER (ORDER BY first), id, name FROM (
            SELECT photographer.id AS id, arg_max(photographer.name, n) AS name, min(n) AS first
            FROM staging WHERE photographer.id IS NOT NULL GROUP BY photographer.id);
        INSERT INTO "Photo"
        SELECT row_number() OVER (), s.id, s.title, s.subtitle, s.photoURL, s.thumbnailURL, s.uploadDate,
               TRY_CAST(s.views AS BIGINT), TRY_CAST(s.latitude AS DOUBLE), TRY_CAST(s.longitude AS DOUBLE), p."_pk"
        FROM (SELECT * FROM staging WHERE id IS NOT NULL QUALIFY row_number() OVER (PARTITION BY id ORDER BY n DESC) = 1) s
        LEFT JOIN "Photographer" p ON p.id = s.photographer.id;

        """
    }
}
