import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// A save's new rows go to PostgreSQL in binary `COPY` statements of a few rows each
/// (`PostgresBatchWriter.rowsPerBinaryCopy`): the end state must not depend on where the
/// pieces fall, nor on which piece meets a key that is stored already.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PostgresCopyPiecesTests {
    /// What `sql` returns on `server`'s database, unaligned, without headers.
    static func value(_ server: PostgresServer, _ sql: String) throws -> String {
        try server.psql(["-At", "-c", sql]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Photos in pieces of 7 rows (saves of 170: 24 full pieces and one of 2), their
    /// photographers through the staging table in pieces as well, history on: every row,
    /// link and row number as on SQLite, and as with one statement per save.
    @Test func rowsCopiedInPiecesEndAsOnSQLiteAndAsInOneStatement() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 1_200, seed: 11).write(to: feed)
        let pipeline = try String(contentsOfFile: PostgresImportTests.photos, encoding: .utf8)
        let pieces = try PostgresServer.database()
        let inPieces = try PostgresImportTests.importBoth([feed], pipeline: pipeline, url: pieces.url, dir: dir,
                                                          saveEvery: 170, chunkSize: 400, rowsPerBinaryCopy: 7)
        #expect(inPieces.sqlite["Photo"]?.count == 1_200)
        PostgresImportTests.expectSameRows(inPieces.sqlite, inPieces.postgres)
        #expect(inPieces.joins[0].runFinished && inPieces.joins[0].records == 1_200 && inPieces.joins[0].rejected == 0)

        let whole = try PostgresServer.database()
        let other = try TemporaryDirectory()
        let inOne = try PostgresImportTests.importBoth([feed], pipeline: pipeline, url: whole.url, dir: other,
                                                       saveEvery: 170, chunkSize: 400, rowsPerBinaryCopy: .max)
        #expect(inOne.postgres == inPieces.postgres)
        // Row numbers (the history's and the links') come from the same sequence draws.
        let numbers = "SELECT string_agg(p.\"_pk\"::text || ':' || p.id || ':' || coalesce(p.\"_whoTook\"::text, '-'), ',' ORDER BY p.\"_pk\") FROM \"Photo\" p"
        #expect(try Self.value(pieces, numbers) == Self.value(whole, numbers))
        // So does the history: each save's inserts, the rows by number.
        let history = "SELECT count(*) || ' ' || string_agg(entity || ' ' || kind || ' ' || rows, '|' ORDER BY position, seq) FROM _ingest_history_changes"
        let saved = try Self.value(pieces, history)
        #expect(saved.contains("Photo insert") && saved.contains("Photographer insert"), "\(saved.prefix(200))")
        #expect(saved == (try Self.value(whole, history)))
    }

    /// The second feed's keys k000–k079 sort so that the stored ones (k050 on) fall in the
    /// eighth piece of 7: that `COPY` fails after seven pieces went in, the save is rolled
    /// back and written again with its keys looked up, and the store ends as SQLite does.
    @Test func aPieceThatMeetsAStoredKeyRollsTheSaveBackAndItIsWrittenAgain() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let pipeline = """
            { "model": { "entities": [ { "name": "T", "attributes": [
                { "name": "id", "type": "string", "optional": false }, { "name": "n", "type": "int64" },
                { "name": "note", "type": "string" } ], "unique": [["id"]] } ] },
              "feed": { "ndjson": true }, "record": "T",
              "mappings": { "T": { "attributes": { "id": "id", "n": "n", "note": "note" } } } }
            """
        func line(_ key: Int, _ note: String) -> String { #"{"id":"k\#(String(format: "%03d", key))","n":\#(key),"note":"\#(note)"}"# }
        let first = try dir.write("first.ndjson", Array(((50..<100).map { line($0, "first") }.joined(separator: "\n") + "\n").utf8))
        let second = try dir.write("second.ndjson", Array(((0..<80).reversed().map { line($0, "second") }.joined(separator: "\n") + "\n").utf8))
        let stores = try PostgresImportTests.importBoth([first, second], pipeline: pipeline, url: server.url, dir: dir,
                                                        saveEvery: 100, chunkSize: 100, rowsPerBinaryCopy: 7)
        #expect(stores.sqlite["T"]?.count == 100)
        #expect(stores.postgres["T"] == stores.sqlite["T"], "\(stores.postgres) vs \(stores.sqlite)")
        #expect(stores.joins[1].records == 80 && stores.joins[1].rejected == 0)
        #expect(try Self.value(server, "SELECT count(*) FROM \"T\" WHERE note = 'second'") == "80")
    }
}

/// Which servers get pieces needs no server to check: libpq's host names say it.
struct PostgresCopyPiecesHostTests {
    /// Pieces are for a server on this machine (a socket or a loopback address); over a
    /// network one statement waits less.
    @Test(arguments: [("/var/run/postgresql", true), ("/tmp", true), ("localhost", true), ("127.0.0.1", true),
                      ("127.0.1.1", true), ("::1", true), ("db.example.com", false), ("10.0.0.5", false),
                      ("192.168.1.20", false), ("2001:db8::1", false), ("localhost.example.com", false)])
    func serversOnThisMachineAreLocal(host: String, local: Bool) {
        #expect(PostgresConnection.isLocal(host: host) == local)
    }
}
