import IngestTestSupport
import Testing
@testable import IngestStore

/// The text arrays the PostgreSQL writer sends its key lookups (`= ANY($1::text[])`).
@Suite struct PostgresArrayLiteralTests {
    static let keys = ["plain", #"with "quotes""#, #"back\slash"#, #"\""#, "comma, and {braces}", "NULL", "", "café ☕ 𝄞", " spaces ",
                       #"\\n is not a line break"#, "\"\u{301} a quote with a combining accent", "\\\u{301}"]

    @Test func eachKeyIsQuotedWithItsBackslashesAndQuotesEscaped() {
        #expect(PostgresBatchWriter.arrayLiteral([#"a"b"#, #"c\d"#, "e"]) == #"{"a\"b","c\\d","e"}"#)
        #expect(PostgresBatchWriter.arrayLiteral([String]()) == "{}")
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func theServerReadsBackEveryKeyAsItWas() throws {
        let connection = try PostgresConnection(PostgresURL(try StoreBackend.newDatabase()))
        let rows = try connection.execute("SELECT k FROM unnest($1::text[]) WITH ORDINALITY AS t(k, n) ORDER BY n",
                                          [PostgresBatchWriter.arrayLiteral(Self.keys)])
        #expect(try (0..<rows.count).map { try rows.text($0, 0) } == Self.keys)
    }
}
