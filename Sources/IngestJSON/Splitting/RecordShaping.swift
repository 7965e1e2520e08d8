/// How the splitter turns a feed's records into the objects its chunk files hold, so
/// that every importer reads plain objects:
///
/// - a keyed record (`FeedShape.keyed`) gains its name as `"@key"`:
///   `"1385": {"type": "push"}` becomes `{"@key":"1385","type":"push"}`, and a value
///   that is not an object becomes `{"@key":"1385","@value":…}`;
/// - plain values (`RecordForm.values`: a feed of strings or numbers) become
///   `{"@value":…}`, which a pipeline maps like any member;
/// - rows (`RecordForm.rows`), arrays of values, become objects named by the header
///   row or the given columns: `[1,"Ann"]` becomes `{"id":1,"name":"Ann"}`. A row of
///   another length becomes `{"@rowError":"…","@row":[…]}`, which the importer
///   rejects with that reason, the row kept whole.
public enum RecordForm: Sendable, Hashable, Codable {
    /// Records are objects already.
    case objects
    /// Records are arrays of values; `columns` names them, or the first record (the
    /// header row, not itself a record) does when nil.
    case rows(columns: [String]?)
    /// Records are plain values (strings, numbers, …): each is mapped as `"@value"`.
    case values
}

/// The member a plain-value record is read under (`RecordForm.values`, and a keyed map's
/// values that are not objects).
package let valueKey = "@value"

/// The member a row that does not fit the header is reported under.
package let rowErrorKey = "@rowError"

/// Rewrites records as `RecordForm` and `FeedShape.keyed` say, as the splitter writes
/// them to chunks (and `ingest infer` reads them).
package struct RecordShaper {
    package let form: RecordForm
    package private(set) var columns: [String]?
    /// Records the shaper consumed (the header row).
    package private(set) var consumed = 0

    /// The nesting the feed is read with (`FeedOptions.maxDepth`), for the records it parses.
    package var maxDepth = FeedOptions.defaultMaxDepth

    package init(form: RecordForm) {
        self.form = form
        if case .rows(let columns) = form { self.columns = columns }
    }

    private static let ownKeyMember = Array("\"@key\"".utf8)

    /// Whether the text holds `"@key"` anywhere, or an escape (`"\u0040key"` is the same
    /// name): then the record is parsed to see whether it is a member of the record itself.
    static func mayHaveOwnKeyMember(_ bytes: [UInt8]) -> Bool {
        bytes.contains(UInt8(ascii: "\\")) || bytes.firstRange(of: ownKeyMember) != nil
    }

    /// The row written for a record that broke a limit (`FeedRecord.refusal`): the importer
    /// rejects it with the limit's message, and the run goes on.
    /// - Throws: what `error` makes, for a header row (the columns cannot be read from it).
    package func refusedRow(_ refusal: FeedError, key: String? = nil, text: [UInt8]? = nil, error: (String) -> FeedError) throws -> [UInt8] {
        if case .rows = form, columns == nil { throw error("the header row: \(refusal.message)") }
        // A keyed record keeps its name, so that its reject says which record it was (after the
        // reason: the batch path knows such a row by how it begins).
        let named = key.map { [JSONMember("@key", .string($0))] } ?? []
        // A malformed line keeps its text (invalid UTF-8 shown as U+FFFD), so that its reject loses nothing readable.
        let line = text.map { [JSONMember("@line", .string(String(decoding: $0, as: UTF8.self)))] } ?? []
        return Array(JSONValue.object([JSONMember(rowErrorKey, .string(refusal.message))] + named + line).description.utf8)
    }

    /// The bytes to write for `record`, or nil when the record is the header row.
    /// - Throws: what `error` makes, for a header row that is not an array of strings.
    package mutating func shape(_ record: FeedRecord, error: (String) -> FeedError) throws -> [UInt8]? {
        var bytes = Array(record.bytes)
        if case .rows = form {
            let value = try JSONValue.parse(bytes, maxDepth: maxDepth)
            guard let columns else {
                guard case .array(let names) = value, !names.isEmpty else { throw error("the header row is not an array of column names") }
                self.columns = try names.map { name in
                    guard case .string(let text) = name else { throw error("the header row holds \(name), not a column name") }
                    return text
                }
                consumed += 1
                return nil
            }
            if case .array(let items) = value {
                if items.count == columns.count {
                    bytes = Array(JSONValue.object(zip(columns, items).map { JSONMember($0, $1) }).description.utf8)
                } else {
                    let reason = "the row has \(items.count) value\(items.count == 1 ? "" : "s"); the header names \(columns.count) column\(columns.count == 1 ? "" : "s")"
                    bytes = Array(JSONValue.object([JSONMember(rowErrorKey, .string(reason)), JSONMember("@row", value)]).description.utf8)
                }
            }
        }
        if case .values = form, record.key == nil {
            bytes = Array("{\"@value\":".utf8) + bytes + [UInt8(ascii: "}")]
        }
        if let key = record.key, Self.mayHaveOwnKeyMember(bytes), let value = try? JSONValue.parse(bytes, maxDepth: maxDepth),
           value["@key"] != nil {
            // Its own "@key" would win over its name (the last of two equal members wins),
            // and the name would be lost without a word: the importer rejects it instead.
            let reason = "the record named \(JSONValue.string(key)) has a member \"@key\" of its own, which its name would be taken for"
            return Array(JSONValue.object([JSONMember(rowErrorKey, .string(reason)), JSONMember("@row", value)]).description.utf8)
        }
        if let key = record.key {
            let name = record.keyText ?? Array(JSONValue.string(key).description.utf8)
            let trimmed = bytes.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
            if trimmed.first == UInt8(ascii: "{") {
                let rest = trimmed.dropFirst().drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
                bytes = Array("{\"@key\":".utf8) + name + (rest.first == UInt8(ascii: "}") ? [] : [UInt8(ascii: ",")]) + rest
            } else {
                bytes = Array("{\"@key\":".utf8) + name + Array(",\"@value\":".utf8) + bytes + [UInt8(ascii: "}")]
            }
        }
        return bytes
    }
}
