import Foundation
import Synchronization

/// Running the object graph's SQL, written with SQLite's placeholders, on PostgreSQL.
enum PostgresSQL {
    /// Runs `sql` with `arguments` on `connection`.
    /// - Throws: `StoreError.postgres` with the server's message and SQLSTATE.
    @discardableResult
    static func run(_ sql: String, _ arguments: [Value?], on connection: PostgresConnection) throws -> PostgresRows {
        let formatted = try formatted(arguments)
        do {
            return try connection.execute(numbered(sql, types: formatted.map { $0?.type }), formatted.map { $0?.text })
        } catch {
            throw StoreError.postgres(error)
        }
    }

    /// Sends `sql` with `arguments` together with the connection's next statement
    /// (`PostgresConnection.enqueue`): its failure is thrown by that statement.
    /// - Throws: `StoreError.postgres` for a value PostgreSQL cannot hold.
    static func enqueue(_ sql: String, _ arguments: [Value?], on connection: PostgresConnection) throws {
        let formatted = try formatted(arguments)
        connection.enqueue(numbered(sql, types: formatted.map { $0?.type }), formatted.map { $0?.text })
    }

    /// `arguments` in text form with their types.
    /// - Throws: `StoreError.postgres` for text holding NUL.
    private static func formatted(_ arguments: [Value?]) throws -> [(text: String, type: String)?] {
        // libpq takes C strings: a NUL would silently cut the value short.
        for case let value? in arguments {
            if case .string(let text) = value, text.utf8.contains(0) {
                throw StoreError.postgres(.unsupported("text holding U+0000 (NUL), which PostgreSQL text cannot hold, as a value in a statement"))
            }
            if case .decimal(let text) = value, text.utf8.contains(0) {
                throw StoreError.postgres(.unsupported("a decimal holding U+0000 (NUL)"))
            }
        }
        return arguments.map { $0.map(PostgresValues.format) }
    }

    /// `sql` with each `?` (the next parameter) and `?n` (parameter n) as `$n`, cast to the
    /// type of the value bound there, so that PostgreSQL never has to guess it (a value in
    /// `lower(?)` or `coalesce(x, ?)` has no type of its own). NULLs stay untyped. Text in
    /// quotes is left alone.
    static func numbered(_ sql: String, types: [String?]) -> String {
        var result = ""
        result.reserveCapacity(sql.utf8.count + types.count * 8)
        var next = 0
        var quote: Character?
        var characters = sql.makeIterator()
        var pending = characters.next()
        while let character = pending {
            pending = characters.next()
            if let open = quote {
                result.append(character)
                if character == open { quote = nil }
                continue
            }
            if character == "'" || character == "\"" {
                quote = character
                result.append(character)
                continue
            }
            guard character == "?" else {
                result.append(character)
                continue
            }
            var digits = ""
            while let digit = pending, digit.isASCII, digit.isNumber {
                digits.append(digit)
                pending = characters.next()
            }
            let number: Int
            if let explicit = Int(digits) {
                number = explicit
            } else {
                next += 1
                number = next
            }
            result += "$\(number)"
            if number <= types.count, let type = types[number - 1] { result += "::" + type }
        }
        return result
    }
}

/// The PostgreSQL connections of one coordinator: taken by a read or a write, given back
/// after it. Idle connections are kept, up to a few; a broken one is dropped.
final class PostgresPool: Sendable {
    let url: PostgresURL
    private let idle = Mutex<[Lent]>([])

    /// A connection in the pool. libpq connections may move between threads, one user at a time.
    final class Lent: @unchecked Sendable {
        let connection: PostgresConnection
        var lastUsed = Date()
        init(_ connection: PostgresConnection) { self.connection = connection }
    }

    /// A connection idle this long is checked before it is lent (a server restart or an
    /// idle timeout leaves it dead, and the next statement would fail for that alone).
    static let checkAfterIdleSeconds = 30.0

    init(url: PostgresURL) { self.url = url }

    /// A connection set up as the object graph reads values: UTC, ISO dates, exact doubles.
    /// - Throws: `StoreError.postgres` when the server cannot be reached.
    static func connect(_ url: PostgresURL) throws -> PostgresConnection {
        do {
            let connection = try PostgresConnection(url)
            try connection.execute("SET TimeZone = 'UTC'")
            try connection.execute("SET DateStyle = 'ISO, YMD'")
            // Shortest exact doubles from PostgreSQL 12 on, and all digits before it.
            try connection.execute("SET extra_float_digits = 3")
            try connection.execute("SET bytea_output = 'hex'")
            return connection
        } catch {
            throw StoreError.postgres(error)
        }
    }

    /// Runs `body` with a connection of the pool (a new one when none is idle).
    func with<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        var reused = idle.withLock { $0.popLast() }
        if let stale = reused, Date().timeIntervalSince(stale.lastUsed) > Self.checkAfterIdleSeconds,
           (try? stale.connection.execute("SELECT 1")) == nil {
            reused = nil
        }
        let lent = try reused ?? Lent(Self.connect(url))
        defer {
            lent.lastUsed = Date()
            if lent.connection.isReusable {
                idle.withLock { connections in if connections.count < 8 { connections.append(lent) } }
            }
        }
        return try body(lent.connection)
    }
}

extension PostgresConnection {
    /// Runs `sql` (SQLite's placeholders, numbered here) and calls `row` for each result
    /// row, in order, for `StoreConnection`.
    /// - Throws: `StoreError.postgres` when the statement fails; what `row` throws.
    func storeQuery(_ sql: String, _ arguments: [Value?], _ row: (StoreRow) throws -> Void) throws {
        let rows = try PostgresSQL.run(sql, arguments, on: self)
        for index in 0..<rows.count { try row(StoreRow(source: .postgres(rows, index))) }
    }
}
