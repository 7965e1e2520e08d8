/// The type of an attribute, and how it is kept in SQLite.
public enum AttributeType: String, Sendable, Codable, CaseIterable {
    case string, int16, int32, int64, double, bool, date, binary, uuid, decimal

    /// Reads a type's name; an unknown name is an error that lists the known ones.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let type = AttributeType(rawValue: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription:
                "'\(text)' is not an attribute type (expected \(Self.allCases.map(\.rawValue).joined(separator: ", ")))"))
        }
        self = type
    }

    /// The column type in the table.
    var sqlType: String {
        switch self {
        case .string, .uuid, .decimal: "TEXT"
        case .int16, .int32, .int64, .bool: "INTEGER"
        case .double, .date: "REAL"
        case .binary: "BLOB"
        }
    }

    /// Whether `value` is of this type (integers also within the width, decimals within
    /// `DecimalText`'s range).
    func accepts(_ value: Value) -> Bool {
        switch (self, value) {
        case (.string, .string), (.double, .double), (.bool, .bool), (.date, .date), (.binary, .binary),
             (.uuid, .uuid), (.int64, .int):
            true
        case (.decimal, .decimal(let text)): DecimalText.canonical(text) != nil
        case (.int16, .int(let v)): Int16(exactly: v) != nil
        case (.int32, .int(let v)): Int32(exactly: v) != nil
        default: false
        }
    }
}
