import Foundation
import IngestTestSupport
import Testing

/// `ingest bench import` measures DuckDB beside the C importer and the sqlite3 CLI when
/// DuckDB is installed (its CLI or its Python package), and says how to get it when not.
@Suite struct BenchDuckDBTests {
    /// Whether `python3 -c SCRIPT` exits 0, and what it printed.
    static func python(_ script: String, _ arguments: [String] = []) -> (ok: Bool, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return (false, "") }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus == 0, String(decoding: data, as: UTF8.self))
    }

    static let hasCLI = ["/usr/bin/duckdb", "/usr/local/bin/duckdb"].contains { FileManager.default.isExecutableFile(atPath: $0) }
    static let hasPython = python("import duckdb").ok

    /// Runs the bench on 200 and 400 records in a new directory.
    static func bench() throws -> (IngestBinary.Outcome, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        let outcome = try IngestBinary.run(["bench", "import", "--records", "400", "--small-records", "200", "--workers", "1",
                                            "--work-dir", directory.path])
        return (outcome, directory)
    }

    @Test(.enabled(if: !hasCLI && !hasPython, "DuckDB is installed here: the bench measures it (the other test)"))
    func withoutDuckDBTheImportBenchSaysHowToGetIt() throws {
        let (outcome, _) = try Self.bench()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("DuckDB not found: install its CLI, or its Python package (pip install duckdb), for DuckDB's rate"))
        #expect(!outcome.stdout.contains("| DuckDB"))
    }

    @Test(.enabled(if: hasPython && !hasCLI, "needs DuckDB's Python package (pip install duckdb), and no duckdb CLI, which the bench would use instead"))
    func theImportBenchLoadsTheFeedWithDuckDB() throws {
        let (outcome, directory) = try Self.bench()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let rows = outcome.stdout.split(separator: "\n").filter { $0.hasPrefix("| DuckDB read_json (Python)") }
        #expect(rows.count == 2, "\(outcome.stdout)")
        // The DuckDB file holds the larger feed: as many photos as it has ids, each linked where it names a photographer.
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".duckdb") }
        #expect(files.count == 1)
        let counts = Self.python("""
            import duckdb, sys
            c = duckdb.connect(sys.argv[1], read_only=True)
            print(c.execute('SELECT count(*), count("_whoTook"), count(DISTINCT id) FROM "Photo"').fetchone())
            print(c.execute('SELECT count(*) FROM "Photographer"').fetchone())
            """, [directory.file(try #require(files.first))])
        #expect(counts.ok)
        let expected = Self.python("""
            import json, sys
            records = json.load(open(sys.argv[1]))
            print((len(records), sum(1 for r in records if isinstance(r.get('photographer'), dict)), len({r['id'] for r in records})))
            print((len({r['photographer']['id'] for r in records if isinstance(r.get('photographer'), dict)}),))
            """, [try Self.feed(in: directory, records: 400)])
        #expect(expected.ok)
        #expect(counts.output == expected.output)
    }

    /// The generated feed of `records` records the bench wrote.
    static func feed(in directory: TemporaryDirectory, records: Int) throws -> String {
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .first { $0.hasSuffix(".json") && $0.contains("-\(records)") })
        return directory.file(name)
    }
}
