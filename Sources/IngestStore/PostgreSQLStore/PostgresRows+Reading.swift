extension PostgresRows {
    /// The text at `row`, `column`.
    /// - Throws: `PostgresError.unexpectedResult` for NULL, or a row or column the result does not have.
    package func text(_ row: Int, _ column: Int) throws(PostgresError) -> String {
        guard let text = self[row, column] else { throw unexpected(row, column, "a value") }
        return text
    }

    /// The integer at `row`, `column` (`bigint`, `integer`, `count(*)`…).
    /// - Throws: `PostgresError.unexpectedResult` for NULL or text that is no integer.
    package func int(_ row: Int, _ column: Int) throws(PostgresError) -> Int {
        guard let number = Int(try text(row, column, "an integer")) else { throw unexpected(row, column, "an integer") }
        return number
    }

    /// The 64-bit integer at `row`, `column` (a row's primary key, say).
    /// - Throws: `PostgresError.unexpectedResult` for NULL or text that is no integer.
    package func int64(_ row: Int, _ column: Int) throws(PostgresError) -> Int64 {
        guard let number = Int64(try text(row, column, "an integer")) else { throw unexpected(row, column, "an integer") }
        return number
    }

    /// The number at `row`, `column` (`double precision`, `numeric`, an integer).
    /// - Throws: `PostgresError.unexpectedResult` for NULL or text that is no number.
    package func double(_ row: Int, _ column: Int) throws(PostgresError) -> Double {
        guard let number = Double(try text(row, column, "a number")) else { throw unexpected(row, column, "a number") }
        return number
    }

    private func text(_ row: Int, _ column: Int, _ expected: String) throws(PostgresError) -> String {
        guard let text = self[row, column] else { throw unexpected(row, column, expected) }
        return text
    }

    private func unexpected(_ row: Int, _ column: Int, _ expected: String) -> PostgresError {
        // Past the result's end libpq reads NULL: say so, not that the server sent a NULL.
        let shape = row < count && column < columns ? "" : " (the result has \(count) row(s) of \(columns) column(s))"
        return .unexpectedResult(sql: sql, row: row, column: column, expected: expected + shape, found: self[row, column])
    }
}
