import CLibPQ
import Foundation

/// One libpq connection, used by one thread at a time: each worker, heartbeat and
/// command opens its own (it is not `Sendable`). Every value is sent as a bound
/// parameter in text form; identifiers are quoted by the callers (`quoted(_:)`).
package final class PostgresConnection {
    private let raw: OpaquePointer
    /// Where the connection goes, without the password (for messages).
    package let target: String

    /// Connects to `url`, giving up after its `connect_timeout` (`PostgresURL.connectionOptions`).
    /// - Throws: `PostgresError.connection` naming host, port, database and libpq's
    ///   reason (never the password).
    package init(_ url: PostgresURL) throws(PostgresError) {
        target = url.description
        let endpoint = "\(url.description) (\(url.endpoint))"
        let options = url.connectionOptions
        let keywords = options.map { strdup($0.keyword) }
        let values = options.map { strdup($0.value) }
        defer { (keywords + values).forEach { free($0) } }
        // expand_dbname: the `dbname` value, the address, is read as a whole connection string.
        let made = (keywords.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { keywordList in
            (values.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { valueList in
                PQconnectdbParams(keywordList.baseAddress, valueList.baseAddress, 1)
            }
        }
        guard let connection = made else {
            throw .connection(target: endpoint, reason: "libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let reason = PostgresURL.trimmed(String(cString: PQerrorMessage(connection)))
            PQfinish(connection)
            throw .connection(target: endpoint, reason: reason)
        }
        raw = connection
        // Notices (NOTICE: relation exists, skipping) are not the user's business.
        PQsetNoticeProcessor(raw, { _, _ in }, nil)
        _ = try execute("SET client_min_messages = warning")
    }

    deinit { PQfinish(raw) }

    /// Statements `enqueue` holds for the next round trip.
    private var queued: [(sql: String, parameters: [String?])] = []

    /// Sends `sql` (with `parameters`) together with the next statement this connection
    /// runs, in one round trip (libpq's pipeline mode), rather than waiting for it alone: for
    /// statements whose rows nobody reads (`BEGIN`, `SAVEPOINT`, a count's update). A save
    /// on PostgreSQL was about twenty round trips, each a wake-up of the client and of the
    /// server on cores the mapping shares (Performance, "Session 45"). Its failure is thrown
    /// by the statement it went with, which then does not run (nor anything after it).
    /// Meant for statements inside a transaction: outside one, each round trip (of up to
    /// `pipelineSlice` statements) commits on its own, what ran before a failure included.
    package func enqueue(_ sql: String, _ parameters: [String?] = []) {
        queued.append((sql, parameters))
    }

    /// Runs `sql` with `parameters` bound as `$1`, `$2`… (text form; nil is NULL), with the
    /// statements `enqueue` holds before it.
    /// - Throws: `PostgresError.server` with the server's message and SQLSTATE (a held
    ///   statement's, when one failed).
    @discardableResult
    package func execute(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) -> PostgresRows {
        guard queued.isEmpty else { return try pipeline([(sql, parameters)])[0] }
        let result = Self.withCStrings(parameters) { count, values in PQexecParams(raw, sql, count, nil, values, nil, nil, 0) }
        return try PostgresRows(checking: result, connection: raw, sql: sql)
    }

    /// Runs `statements` (each `sql` with its text-form `parameters`) in one round trip,
    /// after the statements `enqueue` holds, and returns their rows in order.
    /// - Throws: `PostgresError.server` for the first statement that failed (the ones after
    ///   it do not run), or `.connectionException` when the connection broke meanwhile.
    package func pipeline(_ statements: [(sql: String, parameters: [String?])]) throws(PostgresError) -> [PostgresRows] {
        let held = queued
        queued.removeAll()
        let all = held + statements
        var rows: [PostgresRows] = []
        rows.reserveCapacity(all.count)
        // In slices: the client reads no result before its slice is sent, and a server whose
        // results nobody reads stops reading statements, so one slice's results must fit in
        // the sockets' buffers (a save rejecting thousands of records holds as many inserts).
        for start in stride(from: 0, to: all.count, by: Self.pipelineSlice) {
            rows += try runPipelined(all[start..<min(all.count, start + Self.pipelineSlice)])
        }
        return Array(rows.suffix(statements.count))
    }

    /// Statements in one pipelined round trip at most: their results, some 30 bytes each,
    /// stay far under a socket's buffer.
    static let pipelineSlice = 128

    /// Runs `statements` in one round trip; their rows in order.
    /// - Throws: as `pipeline`.
    private func runPipelined(_ statements: ArraySlice<(sql: String, parameters: [String?])>) throws(PostgresError) -> [PostgresRows] {
        guard PQenterPipelineMode(raw) == 1 else {
            // Not idle, or a libpq without pipelines: one statement after another.
            var rows: [PostgresRows] = []
            for (sql, parameters) in statements { rows.append(try execute(sql, parameters)) }
            return rows
        }
        var firstError: PostgresError?
        var rows: [PostgresRows] = []
        var sent = 0
        for (sql, parameters) in statements {
            let queuedOK = Self.withCStrings(parameters) { count, values in PQsendQueryParams(raw, sql, count, nil, values, nil, nil, 0) }
            guard queuedOK == 1 else {
                firstError = .server(PostgresURL.trimmed(String(cString: PQerrorMessage(raw))), sqlState: .connectionException, sql: sql)
                break
            }
            sent += 1
        }
        let first = statements.first?.sql ?? ""
        if PQpipelineSync(raw) != 1, firstError == nil {
            firstError = .server(PostgresURL.trimmed(String(cString: PQerrorMessage(raw))), sqlState: .connectionException, sql: first)
        }
        // Each statement's results end with a null; the pipeline's with its sync point.
        for (index, statement) in statements.prefix(sent).enumerated() {
            var statementRows: PostgresRows?
            while let result = PQgetResult(raw) {
                if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                    PQclear(result)
                    continue
                }
                do throws(PostgresError) {
                    statementRows = try PostgresRows(checking: result, connection: raw, sql: statement.sql)
                } catch {
                    if firstError == nil { firstError = error }
                }
            }
            if let statementRows { rows.append(statementRows) }
            if PQstatus(raw) == CONNECTION_BAD {
                if firstError == nil, index < sent - 1 || statementRows == nil {
                    firstError = .server(PostgresURL.trimmed(String(cString: PQerrorMessage(raw))), sqlState: .connectionFailure, sql: statement.sql)
                }
                break
            }
        }
        if PQstatus(raw) != CONNECTION_BAD, let error = finishPipeline(first), firstError == nil {
            firstError = error
        }
        if let firstError { throw firstError }
        guard rows.count == statements.count else {
            throw .server(PostgresURL.trimmed(String(cString: PQerrorMessage(raw))), sqlState: .connectionFailure, sql: first)
        }
        return rows
    }

    /// Reads up to the pipeline's sync point and leaves pipeline mode; the error the server
    /// reported there (outside a transaction, the implicit commit's at the sync), or why
    /// pipeline mode could not be left. An error at the sync comes as a result of its own,
    /// then a null, then the sync: reading only up to the first null would leave the
    /// connection in pipeline mode, where no ordinary statement runs again.
    private func finishPipeline(_ sql: String) -> PostgresError? {
        var error: PostgresError?
        var nulls = 0
        while PQstatus(raw) != CONNECTION_BAD {
            guard let result = PQgetResult(raw) else {
                // Nothing pending returns null at once: two in a row, and the sync is not coming.
                nulls += 1
                if nulls > 2 { break }
                continue
            }
            nulls = 0
            let status = PQresultStatus(result)
            if status == PGRES_PIPELINE_SYNC {
                PQclear(result)
                break
            }
            if status == PGRES_FATAL_ERROR, error == nil {
                do throws(PostgresError) { _ = try PostgresRows(checking: result, connection: raw, sql: sql) } catch let failure { error = failure }
            } else {
                PQclear(result)
            }
        }
        guard PQexitPipelineMode(raw) == 1 else {
            return error ?? .server(PostgresURL.trimmed(String(cString: PQerrorMessage(raw))), sqlState: .connectionException, sql: sql)
        }
        return error
    }

    /// Runs the statements `enqueue` holds, when there are any, in one round trip.
    /// - Throws: `PostgresError.server` for the first that failed.
    private func sendQueued() throws(PostgresError) {
        guard !queued.isEmpty else { return }
        _ = try pipeline([])
    }

    /// Runs `sql` with `parameters` bound as `$1`, `$2`… in text form, and `bytes` as the
    /// last parameter in binary form (a `bytea` sent as it is: no hex on either side).
    /// - Throws: `PostgresError.server`.
    @discardableResult
    package func execute(_ sql: String, _ parameters: [String], bytes: [UInt8]) throws(PostgresError) -> PostgresRows {
        try sendQueued()
        let copies = parameters.map { strdup($0) }
        defer { for copy in copies { free(copy) } }
        let result = bytes.withUnsafeBufferPointer { data -> OpaquePointer? in
            let values: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) }
                + [UnsafeRawPointer(data.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self)]
            let lengths = [Int32](repeating: 0, count: copies.count) + [Int32(data.count)]
            let formats = [Int32](repeating: 0, count: copies.count) + [1]
            return PQexecParams(raw, sql, Int32(values.count), nil, values, lengths, formats, 0)
        }
        return try PostgresRows(checking: result, connection: raw, sql: sql)
    }

    /// The first column of the first row `sql` returns, as raw bytes (a `bytea` sent in
    /// binary form: half the bytes of its text form), or nil when there is no row.
    /// - Throws: `PostgresError.server`.
    package func fetchBytes(_ sql: String, _ parameters: [String]) throws(PostgresError) -> [UInt8]? {
        try sendQueued()
        let result = Self.withCStrings(parameters) { count, values in PQexecParams(raw, sql, count, nil, values, nil, nil, 1) }
        let rows = try PostgresRows(checking: result, connection: raw, sql: sql)
        return rows.bytes(row: 0, column: 0)
    }

    /// Calls `body` with `parameters` as libpq takes them: their count and C strings (nil
    /// for NULL, and no array at all for none), freed when it returns.
    private static func withCStrings<T>(_ parameters: [String?], _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T {
        let copies = parameters.map { $0.map { strdup($0) } ?? nil }
        defer { for copy in copies { free(copy) } }
        return copies.withUnsafeBufferPointer { values in
            guard let base = values.baseAddress else { return body(0, nil) }
            return base.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: values.count) { body(Int32(values.count), $0) }
        }
    }

    /// Sends `data` (COPY's text format) to `copy`, a `COPY … FROM STDIN` statement.
    /// - Throws: `PostgresError.server` when the server refuses the statement or a row.
    package func copyIn(_ copy: String, data: [UInt8]) throws(PostgresError) {
        try copyIn(copy) { stream in
            data.withUnsafeBytes { stream.data.append($0) }
            stream.send()
        }
    }

    /// Runs `copy`, a `COPY … FROM STDIN` statement, with the rows `write` appends to the
    /// stream (COPY's text format, calling `rowEnded()` after each): they go to the server
    /// in pieces as they are made, so that it parses one piece while the client makes the
    /// next, and neither side holds the whole batch.
    /// - Throws: `PostgresError.server` when the server refuses the statement or a row.
    func copyIn(_ copy: String, write: (inout CopyStream) -> Void) throws(PostgresError) {
        try startCopy(copy)
        var stream = CopyStream(raw: raw)
        write(&stream)
        try endCopy(copy, &stream)
        try finishCopy(copy)
    }

    /// Runs `copy` once for each piece of `count` rows, `rowsPerStatement` rows at most (all
    /// of them in one statement when that is `count` or more), with the rows of each piece
    /// that `write` appends. A piece is made before its statement starts, and the next one
    /// while the server takes it in.
    ///
    /// Why pieces: PostgreSQL (15) buffers up to 1,000 rows of a binary `COPY` before it
    /// writes them, each in a tuple slot of its own that it registers with the statement's
    /// resource owner, and that registration costs in proportion to the slots already
    /// held. A 1,000-row binary `COPY` cost the server 64,250 instructions a row, the same
    /// rows in statements of 250 rows 56,980 (callgrind of the backend); sampled in real
    /// time, about 3% of the server's CPU on `Pipelines/photos.json` (Performance.md,
    /// "Session 41"). A text `COPY` flushes every 64 kB and does not need this.
    /// - Throws: `PostgresError.server` when the server refuses a statement or a row; the
    ///   pieces before it stay in the open transaction (the caller rolls it back).
    func copyIn(_ copy: String, rows count: Int, rowsPerStatement: Int,
                write: (Range<Int>, inout CopyStream) -> Void) throws(PostgresError) {
        let step = max(1, rowsPerStatement)
        guard count > step else {
            try copyIn(copy) { stream in write(0..<count, &stream) }
            return
        }
        var pieces = stride(from: 0, to: count, by: step).map { $0..<min($0 + step, count) }[...]
        var made = CopyStream(raw: raw, holding: true)
        write(pieces.removeFirst(), &made)
        while true {
            try startCopy(copy)
            try endCopy(copy, &made)
            var next: CopyStream?
            if let piece = pieces.popFirst() {
                var following = CopyStream(raw: raw, holding: true)
                write(piece, &following)
                next = consume following
            }
            try finishCopy(copy)
            guard let following = next.take() else { return }
            made = following
        }
    }

    /// Sends `copy`, a `COPY … FROM STDIN`; the server then waits for its rows.
    private func startCopy(_ copy: String) throws(PostgresError) {
        // COPY has no place in a pipeline: what is held goes first, in a round trip of its own.
        try sendQueued()
        let start = PQexec(raw, copy)
        guard PQresultStatus(start) == PGRES_COPY_IN else {
            _ = try PostgresRows(checking: start, connection: raw, sql: copy)
            throw .server("COPY did not start", sqlState: .internalError, sql: copy)
        }
        PQclear(start)
    }

    /// Sends what `stream` holds and ends the rows (with its failure, if a piece could not be sent).
    private func endCopy(_ copy: String, _ stream: inout CopyStream) throws(PostgresError) {
        stream.send()
        if PQputCopyEnd(raw, stream.failure) != 1 {
            throw .server(PostgresURL.trimmed(String(cString: PQerrorMessage(raw))), sqlState: .connectionException, sql: copy)
        }
    }

    /// Reads the results of a `COPY` whose data has ended; throws the first error.
    private func finishCopy(_ copy: String) throws(PostgresError) {
        var firstError: PostgresError?
        while let result = PQgetResult(raw) {
            do throws(PostgresError) { _ = try PostgresRows(checking: result, connection: raw, sql: copy) } catch {
                if firstError == nil { firstError = error }
            }
        }
        if let firstError { throw firstError }
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    package func transaction<T>(_ body: () throws -> T) throws -> T {
        // Sent with the body's first statement.
        enqueue("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            _ = try? rollback()
            throw error
        }
    }

    /// Rolls the open transaction back. The statements `enqueue` holds are dropped, not
    /// sent: the rollback would undo them, and sent before it, one that failed would keep
    /// the `ROLLBACK` itself from running and leave the transaction open and aborted.
    /// - Throws: `PostgresError` when the connection broke.
    package func rollback() throws(PostgresError) {
        queued.removeAll()
        try execute("ROLLBACK")
    }

    /// Rolls the open transaction back to `savepoint`. The statements `enqueue` holds go
    /// first, their failure ignored (the savepoint itself may be among them; what failed
    /// after it is what this undoes), then `ROLLBACK TO SAVEPOINT` alone, which also runs
    /// in a transaction that failure aborted.
    /// - Throws: `PostgresError`, e.g. when the savepoint was never made.
    package func rollback(toSavepoint savepoint: String) throws(PostgresError) {
        _ = try? sendQueued()
        try execute("ROLLBACK TO SAVEPOINT \(savepoint)")
    }

    /// Waits up to `seconds` (at most 24 hours; none for a negative or NaN wait) for a
    /// notification on a channel this connection LISTENs on; true when one (or more)
    /// came, all of them taken.
    /// - Throws: `PostgresError.connection` when the connection broke.
    package func waitForNotification(seconds: Double) throws(PostgresError) -> Bool {
        func drained() -> Bool {
            var any = false
            while let notice = PQnotifies(raw) {
                any = true
                PQfreemem(notice)
            }
            return any
        }
        // Held statements first: notifications libpq reads with their results wait in its own
        // queue, where poll(2) would not see them.
        try sendQueued()
        if drained() { return true }
        var socket = pollfd(fd: PQsocket(raw), events: Int16(POLLIN), revents: 0)
        guard socket.fd >= 0 else { throw .connection(target: target, reason: "the connection has no socket") }
        // poll(2) takes an Int32 of milliseconds: a longer wait would trap converting to it.
        let milliseconds = seconds.isNaN ? 0 : min(max(0, seconds * 1000), 86_400_000)
        if poll(&socket, 1, Int32(milliseconds)) > 0 {
            guard PQconsumeInput(raw) == 1 else {
                throw .connection(target: target, reason: PostgresURL.trimmed(String(cString: PQerrorMessage(raw))))
            }
        }
        return drained()
    }

    /// The `connect_timeout` the connection was opened with, in seconds (nil: none, wait for ever).
    package var connectTimeout: Int? {
        guard let options = PQconninfo(raw) else { return nil }
        defer { PQconninfoFree(options) }
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "connect_timeout" { return option.pointee.val.flatMap { Int(String(cString: $0)) } }
            option += 1
        }
        return nil
    }

    /// Whether the server is on this machine: the connection goes through a Unix-domain
    /// socket or to a loopback address.
    package var isLocal: Bool { PQhost(raw).map { Self.isLocal(host: String(cString: $0)) } ?? false }

    /// Whether libpq's `host` (a name, an address, or a socket's directory) is this machine.
    package static func isLocal(host: String) -> Bool {
        host.hasPrefix("/") || host == "localhost" || host.hasPrefix("127.") || host == "::1"
    }

    /// Whether the connection still works (a statement failed because the server went away, say).
    package var isOK: Bool { PQstatus(raw) == CONNECTION_OK }

    /// Whether another user may take the connection as new: it works, holds no statement,
    /// and is in no transaction (an aborted one would fail that user's first statement)
    /// and out of pipeline mode.
    package var isReusable: Bool {
        isOK && queued.isEmpty && PQtransactionStatus(raw) == PQTRANS_IDLE && PQpipelineStatus(raw) == PQ_PIPELINE_OFF
    }
}
