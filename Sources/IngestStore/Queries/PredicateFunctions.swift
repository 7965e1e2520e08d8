import Foundation
import CSQLite

/// The SQL functions compiled predicates call, registered on every connection, so that
/// SQL and in-memory evaluation share one definition of folding, LIKE and MATCHES.
///
/// Each argument is read, and the result given, with its byte count: GRDB's
/// `DatabaseFunction`, used before, read an argument's text as a C string, so a value with
/// a NUL character ("a\u{0}b") reached the function cut at the NUL and `id ==[c] "a"`
/// matched it (found by probing).
enum PredicateFunctions {
    /// The collation that orders decimal columns by number (`DecimalText.compare`).
    static let decimalCollation = "ingest_decimal"

    static func register(_ db: SQLiteDatabase) throws {
        try db.addCollation("ingest_localized") { a, b in a.localizedStandardCompare(b) }
        // On the bytes SQLite holds: `addCollation` makes two Strings per comparison, and
        // an index of decimals compares on every insert.
        sqlite3_create_collation_v2(db.sqliteConnection, decimalCollation, SQLITE_UTF8, nil, { _, count1, bytes1, count2, bytes2 in
            Int32(DecimalText.compare(UnsafeRawBufferPointer(start: bytes1, count: Int(count1)), UnsafeRawBufferPointer(start: bytes2, count: Int(count2))))
        }, nil)
        // Format 1 stores' decimals made canonical (`PersistentStoreCoordinator.canonicalizeDecimals`);
        // text that is no decimal is left as it is.
        add("ingest_decimal_canonical", arguments: 1, to: db) { context, values in
            guard let text = argumentText(values[0]) else { return sqlite3_result_null(context) }
            result(DecimalText.canonical(text) ?? text, context)
        }
        add("ingest_fold", arguments: 2, to: db) { context, values in
            guard let text = argumentText(values[0]), let flags = integer(values[1]) else { return sqlite3_result_null(context) }
            result(ValueComparison.fold(text, PredicateComparison.Options(rawValue: Int(flags))), context)
        }
        add("ingest_like", arguments: 2, to: db) { context, values in
            guard let text = argumentText(values[0]), let pattern = argumentText(values[1]) else { return sqlite3_result_null(context) }
            sqlite3_result_int(context, ValueComparison.like(Array(text.unicodeScalars), Array(pattern.unicodeScalars)) ? 1 : 0)
        }
        add("ingest_matches", arguments: 3, to: db) { context, values in
            guard let text = argumentText(values[0]), let pattern = argumentText(values[1]), let flags = integer(values[2]) else {
                return sqlite3_result_null(context)
            }
            do {
                let matches = try ValueComparison.test(.string(text), .matches, .string(pattern), PredicateComparison.Options(rawValue: Int(flags)))
                sqlite3_result_int(context, matches ? 1 : 0)
            } catch {
                sqlite3_result_error(context, "\(error)", -1)
            }
        }
    }

    typealias Body = (OpaquePointer?, [OpaquePointer?]) -> Void

    /// A deterministic function of `arguments` values, calling `body` with its context and arguments.
    private static func add(_ name: String, arguments: Int32, to db: SQLiteDatabase, _ body: @escaping Body) {
        final class Box { let body: Body; init(_ body: @escaping Body) { self.body = body } }
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        sqlite3_create_function_v2(db.sqliteConnection, name, arguments, SQLITE_UTF8 | SQLITE_DETERMINISTIC, box, { context, count, values in
            let box = Unmanaged<Box>.fromOpaque(sqlite3_user_data(context)).takeUnretainedValue()
            box.body(context, (0..<Int(count)).map { values![$0] })
        }, nil, nil, { box in Unmanaged<Box>.fromOpaque(box!).release() })
    }

    /// An argument's text, NUL characters included; nil for NULL.
    private static func argumentText(_ value: OpaquePointer?) -> String? {
        guard sqlite3_value_type(value) != SQLITE_NULL, let bytes = sqlite3_value_text(value) else { return nil }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(value))), as: UTF8.self)
    }

    private static func integer(_ value: OpaquePointer?) -> Int64? {
        sqlite3_value_type(value) == SQLITE_NULL ? nil : sqlite3_value_int64(value)
    }

    private static func result(_ text: String, _ context: OpaquePointer?) {
        var text = text
        text.withUTF8 { sqlite3_result_text(context, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), Int32($0.count), SQLITE_TRANSIENT) }
    }
}
