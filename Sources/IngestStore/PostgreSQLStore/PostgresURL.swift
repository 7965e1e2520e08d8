import CLibPQ

/// A PostgreSQL store's address: a libpq URL (`postgresql://user@host:port/db`) or
/// key-value string; what it leaves out comes from the `PG*` variables and the password
/// from the URL, `PGPASSWORD` or `~/.pgpass`, as libpq decides.
public struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    /// What the user gave, password included: passed to libpq only, never printed.
    let conninfo: String

    /// Whether `text` names a PostgreSQL store rather than a SQLite file.
    public static func isPostgres(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
    }

    /// - Throws: `PostgresError.connection` when libpq cannot parse `text`.
    public init(_ text: String) throws(PostgresError) {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(text, &error) else {
            // libpq's message quotes the part it cannot read, which may be the password:
            // it is shown only for an address that holds none (an unknown option, say).
            let reason = error.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) }
            if let error { PQfreemem(error) }
            if let reason, !Self.mayHoldPassword(text) {
                throw .connection(target: text, reason: reason)
            }
            throw .connection(target: "(an address libpq cannot read)",
                              reason: "not a valid postgresql:// URL or key=value string (percent-encode special characters in the password, or put it in PGPASSWORD or ~/.pgpass)")
        }
        PQconninfoFree(options)
        conninfo = text
    }

    /// Whether `text` may hold a password: a `user:…@` in a URL, or a password key.
    static func mayHoldPassword(_ text: String) -> Bool {
        // Erring on the side of hiding: any `pass` (a key, in any case), any percent-encoding
        // (which can spell one), and a `:` anywhere before the last `@` after the scheme
        // (libpq may read that part as user:password, whatever `/` or `?` it holds).
        let lowered = text.lowercased()
        if lowered.contains("pass") || lowered.contains("%") { return true }
        guard let scheme = text.range(of: "://") else { return false }
        let rest = text[scheme.upperBound...]
        guard let at = rest.lastIndex(of: "@") else { return false }
        return rest[..<at].contains(":")
    }

    /// The address as given, without its password (what messages and hints show).
    public var description: String { withoutPassword }

    /// Where the address leads, with what it leaves to the environment filled in from the
    /// `PG*` variables and libpq's defaults: `host H, port P, database D, user U`.
    public var endpoint: String {
        var parts: [String: String] = [:]
        if let options = PQconninfoParse(conninfo, nil) {
            var option = options
            while let keyword = option.pointee.keyword {
                if let value = option.pointee.val { parts[String(cString: keyword)] = String(cString: value) }
                option += 1
            }
            PQconninfoFree(options)
        }
        let environment = ProcessInfo.processInfo.environment
        func part(_ key: String, _ variable: String) -> String? { parts[key] ?? environment[variable] }
        let user = part("user", "PGUSER") ?? (environment["USER"] ?? "")
        let host = part("host", "PGHOST") ?? "the default socket"
        let port = part("port", "PGPORT") ?? "5432"
        let database = part("dbname", "PGDATABASE") ?? user
        return "host \(host), port \(port), database \(database), user \(user)"
    }

    /// The value the address itself gives `keyword` (`dbname`, `service`…), if any.
    package func value(of keyword: String) -> String? {
        guard let options = PQconninfoParse(conninfo, nil) else { return nil }
        defer { PQconninfoFree(options) }
        var option = options
        while let key = option.pointee.keyword {
            if String(cString: key) == keyword, let value = option.pointee.val { return String(cString: value) }
            option += 1
        }
        return nil
    }

    /// The password the address itself holds (in the URL or as `password=`), if any.
    package var password: String? {
        guard let options = PQconninfoParse(conninfo, nil) else { return nil }
        defer { PQconninfoFree(options) }
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "password", let value = option.pointee.val { return String(cString: value) }
            option += 1
        }
        return nil
    }

    /// The address as given with its password taken out, for another process (which
    /// gets the password from `PGPASSWORD`, not from its command line).
    package var withoutPassword: String {
        var text = conninfo
        if let scheme = text.range(of: "://"), let at = text[scheme.upperBound...].firstIndex(of: "@") {
            let userInfo = scheme.upperBound..<at
            if let colon = text[userInfo].firstIndex(of: ":") { text.removeSubrange(colon..<at) }
        }
        // password=… as a URL parameter or a key-value pair.
        while let range = text.range(of: #"(?<=[?&\s]|^)password\s*=\s*('(\\.|[^'])*'|[^&\s]*)(&|\s+)?"#, options: .regularExpression) { text.removeSubrange(range) }
        text = text.trimmingCharacters(in: .whitespaces)
        if text.hasSuffix("?") || text.hasSuffix("&") { text.removeLast() }
        return text
    }

    /// How long a connection waits for the server, in seconds, when neither the address
    /// nor `PGCONNECT_TIMEOUT` says: a stopped server, or an address that takes the
    /// connection and never answers, would otherwise keep a command waiting for ever.
    package static let defaultConnectTimeout = 10

    /// The keywords and values a connection is opened with (`PQconnectdbParams`, the address
    /// as `dbname` to be expanded): `connect_timeout` first, so that the address's own
    /// overrides it; left out when `PGCONNECT_TIMEOUT` sets one.
    package var connectionOptions: [(keyword: String, value: String)] {
        var options: [(keyword: String, value: String)] = []
        if ProcessInfo.processInfo.environment["PGCONNECT_TIMEOUT"] == nil {
            options.append(("connect_timeout", String(Self.defaultConnectTimeout)))
        }
        return options + [("dbname", conninfo)]
    }

    static func trimmed(_ message: String) -> String {
        message.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "\n\t", with: " ").replacingOccurrences(of: "\n", with: "; ")
    }
}

import Foundation
