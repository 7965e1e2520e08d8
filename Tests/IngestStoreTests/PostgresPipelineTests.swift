import IngestTestSupport
import Testing
@testable import IngestStore

/// Statements held for the next round trip (`PostgresConnection.enqueue`) and several sent
/// in one (`pipeline`): they run in order, their failure stops what follows, and the
/// connection goes on working after it.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PostgresPipelineTests {
    private func connection() throws -> PostgresConnection {
        try connectionAndURL().connection
    }

    private func connectionAndURL() throws -> (connection: PostgresConnection, url: PostgresURL) {
        let url = try PostgresURL(try StoreBackend.newDatabase())
        let connection = try PostgresConnection(url)
        try connection.execute("CREATE TABLE t (n integer PRIMARY KEY, label text)")
        return (connection, url)
    }

    private func labels(_ connection: PostgresConnection) throws -> [String] {
        let rows = try connection.execute("SELECT label FROM t ORDER BY n")
        return try (0..<rows.count).map { try rows.text($0, 0) }
    }

    @Test func heldStatementsRunBeforeTheNextStatementInTheOrderGiven() throws {
        let connection = try connection()
        connection.enqueue("INSERT INTO t VALUES (1, $1)", ["one"])
        connection.enqueue("UPDATE t SET label = label || $1", [" and more"])
        let rows = try connection.execute("SELECT count(*) FROM t")
        #expect(try rows.int(0, 0) == 1)
        #expect(try labels(connection) == ["one and more"])
    }

    @Test func aPipelineReturnsEachStatementsRowsInOrder() throws {
        let connection = try connection()
        connection.enqueue("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        let results = try connection.pipeline([
            ("SELECT label FROM t WHERE n = $1", ["2"]),
            ("UPDATE t SET label = 'c' WHERE n <= $1", ["2"]),
            ("SELECT n FROM t WHERE label = 'c' ORDER BY n", []),
        ])
        #expect(results.count == 3)
        #expect(try results[0].text(0, 0) == "b")
        #expect(results[1].changed == 2)
        #expect(results[2].count == 2)
    }

    @Test func aFailingHeldStatementIsThrownByTheNextAndNothingAfterItRuns() throws {
        let connection = try connection()
        try connection.transaction {
            connection.enqueue("INSERT INTO t VALUES (1, 'kept')")
        }
        connection.enqueue("BEGIN")
        connection.enqueue("INSERT INTO t VALUES (1, 'a duplicate')")
        connection.enqueue("INSERT INTO t VALUES (2, 'after the failure')")
        #expect {
            try connection.execute("INSERT INTO t VALUES (3, 'the next statement')")
        } throws: { error in
            (error as? PostgresError)?.sqlState == .uniqueViolation && "\(error)".contains("(n)=(1)")
        }
        // The transaction is aborted, as it would be with one statement after another.
        #expect(throws: PostgresError.self) { try connection.execute("SELECT 1") }
        try connection.execute("ROLLBACK")
        #expect(try labels(connection) == ["kept"])
    }

    @Test func thousandsOfHeldStatementsGoInSlicesAndAllRun() throws {
        let connection = try connection()
        let count = PostgresConnection.pipelineSlice * 20 + 7
        let padding = String(repeating: "x", count: 1_000)
        connection.enqueue("BEGIN")
        for n in 1...count { connection.enqueue("INSERT INTO t VALUES ($1, $2)", [String(n), padding]) }
        let rows = try connection.execute("SELECT count(*), sum(n) FROM t")
        try connection.execute("COMMIT")
        #expect(try rows.int(0, 0) == count)
        #expect(try rows.int(0, 1) == count * (count + 1) / 2)
    }

    @Test func aFailureInALaterSliceIsTheErrorThrown() throws {
        let connection = try connection()
        connection.enqueue("BEGIN")
        for n in 1...(PostgresConnection.pipelineSlice * 3) {
            // The second slice's tenth statement repeats the first key.
            let key = n == PostgresConnection.pipelineSlice + 10 ? 1 : n
            connection.enqueue("INSERT INTO t VALUES ($1, 'row')", [String(key)])
        }
        // The duplicate's error, not the aborted transaction's that later statements would meet.
        #expect {
            try connection.execute("SELECT 1")
        } throws: { error in
            (error as? PostgresError)?.sqlState == .uniqueViolation
        }
        try connection.execute("ROLLBACK")
        connection.enqueue("INSERT INTO t VALUES (0, 'after the rollback')")
        #expect(try labels(connection) == ["after the rollback"])
    }

    @Test func heldStatementsGoBeforeACopy() throws {
        let connection = try connection()
        connection.enqueue("BEGIN")
        connection.enqueue("INSERT INTO t VALUES (1, 'before the copy')")
        try connection.copyIn("COPY t (n, label) FROM STDIN", data: Array("2\tcopied\n".utf8))
        try connection.execute("COMMIT")
        #expect(try labels(connection) == ["before the copy", "copied"])
    }

    @Test func aTransactionWhoseBodyThrowsBeforeAnyStatementLeavesNothingOpen() throws {
        let (connection, url) = try connectionAndURL()
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try connection.transaction { throw Stop() }
        }
        // Not in a transaction: a statement after it commits on its own.
        try connection.execute("INSERT INTO t VALUES (1, 'alone')")
        let other = try PostgresConnection(url)
        let rows = try other.execute("SELECT count(*) FROM t")
        #expect(try rows.int(0, 0) == 1)
    }
}
