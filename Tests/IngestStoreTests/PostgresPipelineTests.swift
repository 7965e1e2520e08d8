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
        // The transaction is aborted, as it would be with one statement after another (and
        // the connection is out of pipeline mode: this is the server's refusal, not libpq's).
        #expect {
            try connection.execute("SELECT 1")
        } throws: { error in
            (error as? PostgresError)?.sqlState == "25P02"
        }
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
        let slice = PostgresConnection.pipelineSlice
        for n in 1...(slice * 3) {
            switch n {
            // The third slice ends the transaction and writes a marker: had it been sent
            // after the second failed, the marker would be stored.
            case slice * 2 + 5: connection.enqueue("ROLLBACK")
            case slice * 2 + 6: connection.enqueue("INSERT INTO t VALUES (-1, 'sent after the failure')")
            // The second slice's tenth statement repeats the first key.
            default: connection.enqueue("INSERT INTO t VALUES ($1, 'row')", [String(n == slice + 10 ? 1 : n)])
            }
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

    @Test func aRollbackBehindAFailingHeldStatementStillEndsTheTransaction() throws {
        let connection = try connection()
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try connection.transaction {
                connection.enqueue("INSERT INTO t VALUES (1, 'held')")
                connection.enqueue("SELECT 1 / 0")
                throw Stop()
            }
        }
        // Sent before the ROLLBACK, the division's failure would have kept it from running,
        // the transaction left open and aborted for whoever used the connection next.
        #expect(connection.isReusable)
        try connection.execute("INSERT INTO t VALUES (2, 'next')")
        #expect(try labels(connection) == ["next"])
    }

    @Test func rollingBackToASavepointHeldWithAFailingStatementKeepsTheWorkBeforeIt() throws {
        let connection = try connection()
        try connection.execute("BEGIN")
        try connection.execute("INSERT INTO t VALUES (1, 'before the savepoint')")
        connection.enqueue("SAVEPOINT batch")
        connection.enqueue("INSERT INTO t VALUES (1, 'a duplicate')")
        try connection.rollback(toSavepoint: "batch")
        try connection.execute("COMMIT")
        #expect(try labels(connection) == ["before the savepoint"])
        #expect(connection.isReusable)
    }

    @Test func anErrorAtThePipelinesSyncIsThrownAndTheConnectionWorksAfterIt() throws {
        let connection = try connection()
        // Checked at commit: outside a transaction, at the pipeline's sync point.
        try connection.execute("CREATE TABLE d (k integer UNIQUE DEFERRABLE INITIALLY DEFERRED)")
        #expect {
            try connection.pipeline([("INSERT INTO d VALUES (1), (1)", []), ("SELECT 1", [])])
        } throws: { error in
            (error as? PostgresError)?.sqlState == .uniqueViolation
        }
        #expect(connection.isReusable)
        let rows = try connection.execute("SELECT count(*) FROM d")
        #expect(try rows.int(0, 0) == 0)
    }

    @Test func aNotificationAHeldStatementBringsEndsTheWaitAtOnce() throws {
        let connection = try connection()
        try connection.execute("LISTEN held_channel")
        connection.enqueue("NOTIFY held_channel")
        let clock = ContinuousClock()
        var came = false
        let waited = try clock.measure { came = try connection.waitForNotification(seconds: 60) }
        #expect(came)
        // libpq reads the notification with the held statement's result, in its own queue,
        // where poll(2) does not see it: waiting on the socket would last the whole minute.
        #expect(waited < .seconds(30))
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
