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

    /// Runs `sql` with `parameters` bound as `$1`, `$2`… (text form; nil is NULL).
    /// - Throws: `PostgresError.server` with the server's message and SQLSTATE.
    @discardableResult
    package func execute(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) -> PostgresRows {
        let result: OpaquePointer?
        if parameters.isEmpty {
            result = PQexecParams(raw, sql, 0, nil, nil, nil, nil, 0)
        } else {
            let copies = parameters.map { $0.map { strdup($0) } ?? nil }
            defer { for copy in copies { free(copy) } }
            result = copies.withUnsafeBufferPointer { values in
                values.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: values.count) { pointer in
                    PQexecParams(raw, sql, Int32(values.count), nil, pointer, nil, nil, 0)
                }
            }
        }
        return try PostgresRows(checking: result, connection: raw, sql: sql)
    }

    /// Runs `sql` with `parameters` bound as `$1`, `$2`… in text form, and `bytes` as the
    /// last parameter in binary form (a `bytea` sent as it is: no hex on either side).
    /// - Throws: `PostgresError.server`.
    @discardableResult
    package func execute(_ sql: String, _ parameters: [String], bytes: [UInt8]) throws(PostgresError) -> PostgresRows {
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
        let copies = parameters.map { strdup($0) }
        defer { for copy in copies { free(copy) } }
        let result = copies.withUnsafeBufferPointer { values in
            values.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: values.count) { pointer in
                PQexecParams(raw, sql, Int32(values.count), nil, pointer, nil, nil, 1)
            }
        }
        let rows = try PostgresRows(checking: result, connection: raw, sql: sql)
        return rows.bytes(row: 0, column: 0)
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
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
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
}

/// A statement's result rows, in text form. Read server data with the throwing accessors
/// (`text`, `int`, `int64`, `double`, `flag`): a NULL or a value of another type where one
/// was expected throws `PostgresError.unexpectedResult` instead of stopping the process.
package final class PostgresRows {
    private let result: OpaquePointer?
    package let count: Int
    package let columns: Int
    /// The statement that made the rows, for errors.
    package let sql: String

    init(checking result: OpaquePointer?, connection: OpaquePointer, sql: String) throws(PostgresError) {
        self.sql = sql
        let status = result.map { PQresultStatus($0) } ?? PGRES_FATAL_ERROR
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_COPY_IN else {
            let message: String
            var state = PostgresError.SQLState.internalError
            if let result {
                message = String(cString: PQresultErrorMessage(result))
                if let code = PQresultErrorField(result, Int32(UInt8(ascii: "C"))) {
                    state = .init(rawValue: String(cString: code))
                } else if PQstatus(connection) == CONNECTION_BAD {
                    // libpq's own report of a lost server ("server closed the connection
                    // unexpectedly") carries no SQLSTATE: the connection's status says what it is.
                    state = .connectionFailure
                }
                PQclear(result)
            } else {
                // No result at all: libpq could not send the statement ("no connection to the server").
                message = String(cString: PQerrorMessage(connection))
                state = .connectionException
            }
            throw .server(PostgresURL.trimmed(message.replacingOccurrences(of: "ERROR:  ", with: "")), sqlState: state, sql: sql)
        }
        self.result = result
        count = Int(PQntuples(result))
        columns = Int(PQnfields(result))
    }

    deinit { if let result { PQclear(result) } }

    /// The value at `row`, `column`, or nil for NULL.
    package subscript(row: Int, column: Int) -> String? {
        guard PQgetisnull(result, Int32(row), Int32(column)) == 0 else { return nil }
        return String(cString: PQgetvalue(result, Int32(row), Int32(column)))
    }

    /// Whether the value at `row`, `column` is NULL.
    func isNull(row: Int, column: Int) -> Bool { PQgetisnull(result, Int32(row), Int32(column)) != 0 }

    /// The type of a result column (PostgreSQL's `pg_type` OID: 20 is `bigint`, 701 `double precision`).
    func typeOID(column: Int) -> UInt32 { UInt32(PQftype(result, Int32(column))) }

    /// The raw bytes of a binary-format result's value, or nil for none.
    func bytes(row: Int, column: Int) -> [UInt8]? {
        guard row < count, column < columns, PQgetisnull(result, Int32(row), Int32(column)) == 0,
              let value = PQgetvalue(result, Int32(row), Int32(column)) else { return nil }
        let length = Int(PQgetlength(result, Int32(row), Int32(column)))
        return Array(UnsafeRawBufferPointer(start: value, count: length))
    }

    /// Rows changed by an INSERT, UPDATE or DELETE.
    package var changed: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }
}

/// The rows of a `COPY … FROM STDIN` under way (`PostgresConnection.copyIn(_:write:)`).
struct CopyStream: ~Copyable {
    /// Rows made and not sent yet: append to it, then call `rowEnded()`. It starts small and
    /// doubles as rows come, so a COPY of a few rows does not take a piece's room.
    var data = ByteBuffer(capacity: 1 << 12)
    fileprivate let raw: OpaquePointer
    /// libpq's reason when a piece could not be sent (the COPY then ends with it, and fails).
    fileprivate(set) var failure: String?
    /// Sent once this much is made: large enough that a piece costs few calls, small enough
    /// that the server starts on the batch early.
    static let piece = 1 << 17

    /// Whether rows wait for `send()` however many there are: for a piece made before its
    /// `COPY` starts.
    fileprivate let holding: Bool

    fileprivate init(raw: OpaquePointer, holding: Bool = false) {
        self.raw = raw
        self.holding = holding
    }

    /// Sends what is made once it reaches a piece.
    @inline(__always)
    mutating func rowEnded() {
        if data.count >= Self.piece && !holding { send() }
    }

    /// Sends what is made (libpq writes it out, in blocking mode, as the server takes it).
    mutating func send() {
        guard failure == nil else { return data.removeAll() }
        var failed: String?
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count, failed == nil {
                let count = min(1 << 20, buffer.count - offset)
                let sent = PQputCopyData(raw, (buffer.baseAddress! + offset).assumingMemoryBound(to: CChar.self), Int32(count))
                if sent != 1 { failed = String(cString: PQerrorMessage(raw)) }
                offset += count
            }
        }
        failure = failed
        data.removeAll()
    }
}
