import CLibPQ
import Foundation

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
