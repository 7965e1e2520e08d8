import IngestJSON

/// An object's fields, checked against the names allowed at its place in the file.
struct Fields {
    let members: [String: JSONValue]
    let at: String

    init(_ value: JSONValue, at: String, allowed: Set<String>) throws {
        guard case .object(let list) = value else { throw PipelineError(at: at, "expected an object") }
        for member in list where !allowed.contains(member.key) {
            throw PipelineError(at: at, "unknown field '\(member.key)' (expected \(allowed.sorted().joined(separator: ", ")))")
        }
        members = Dictionary(list.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
        self.at = at
    }

    func optional(_ name: String) -> JSONValue? { members[name] }

    func required(_ name: String) throws -> JSONValue {
        guard let value = members[name] else { throw PipelineError(at: at, "missing field '\(name)'") }
        return value
    }

    static func string(_ value: JSONValue, at: String) throws -> String {
        guard case .string(let text) = value else { throw PipelineError(at: at, "expected a string") }
        return text
    }

    static func bool(_ value: JSONValue, at: String) throws -> Bool {
        guard case .bool(let flag) = value else { throw PipelineError(at: at, "expected true or false") }
        return flag
    }

    static func positive(_ value: JSONValue, at: String) throws -> Int {
        guard case .number(let text) = value, let number = Int(text), number > 0 else {
            throw PipelineError(at: at, "expected a whole number greater than 0")
        }
        return number
    }
}
