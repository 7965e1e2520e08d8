/// Where a value sits in a record, as a pipeline names it.
///
/// - `a.b.c`: keys, one per dot.
/// - `coordinates[1]`, `items[-1]`: an array element by position (from the end when negative).
/// - `coordinates.1`: a key of digits also picks the element of an array.
/// - `["key.with.dots"]`, `['a key with spaces']`: any key, quoted (JSON escapes inside
///   double quotes: `["say \"hi\""]`).
///
/// `properties["addr:street"].name[0]` mixes them.
public struct JSONPath: Sendable, Hashable, CustomStringConvertible {
    public enum Step: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    public let steps: [Step]
    /// The text the path was written as.
    public let description: String

    /// The keys before the first step that may index an array (an index, or a key of
    /// digits after the first step); all of them when there is none. The first step is
    /// read from a record or a related object, which are objects, so a first key of
    /// digits (`1962`, a year column) is a member name.
    public var keyPrefix: [String] {
        var keys: [String] = []
        for step in steps {
            guard case .key(let key) = step, keys.isEmpty || !Self.isDigits(key) else { break }
            keys.append(key)
        }
        return keys
    }

    static func isDigits(_ key: String) -> Bool { !key.isEmpty && key.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }

    /// The steps after `keyPrefix`: nil when the path is keys only.
    public var rest: JSONPath? {
        let count = keyPrefix.count
        guard count < steps.count else { return nil }
        return JSONPath(steps: Array(steps[count...]), description: description)
    }

    public init(steps: [Step], description: String) {
        self.steps = steps
        self.description = description
    }

    /// A path of keys alone.
    public init(keys: [String]) {
        steps = keys.map(Step.key)
        description = keys.joined(separator: ".")
    }

    /// Parses the path syntax above.
    /// - Throws: `JSONPathError` naming the column of the problem.
    public init(parsing text: String) throws {
        let bytes = Array(text.utf8)
        var steps: [Step] = []
        var index = 0
        func fail(_ message: String) -> JSONPathError { JSONPathError(path: text, column: index + 1, message: message) }
        guard !bytes.isEmpty else { throw fail("the path is empty") }
        var expectKey = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "[") {
                index += 1
                guard index < bytes.count else { throw fail("'[' is not closed") }
                if bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") {
                    let quote = bytes[index]
                    index += 1
                    var key: [UInt8] = []
                    while index < bytes.count, bytes[index] != quote {
                        if bytes[index] == UInt8(ascii: "\\"), quote == UInt8(ascii: "\""), index + 1 < bytes.count {
                            // JSON escapes: decoded by the JSON parser itself.
                            let end = bytes.index(after: index + 1)
                            key += bytes[index..<end]
                            index = end
                            continue
                        }
                        key.append(bytes[index])
                        index += 1
                    }
                    guard index < bytes.count else { throw fail("the quoted key is not closed") }
                    index += 1
                    let decoded: String
                    if quote == UInt8(ascii: "\"") {
                        guard case .string(let value)? = try? JSONValue.parse([quote] + key + [quote]) else {
                            throw fail("the quoted key is not a valid JSON string")
                        }
                        decoded = value
                    } else {
                        decoded = String(decoding: key, as: UTF8.self)
                    }
                    steps.append(.key(decoded))
                } else {
                    let start = index
                    if bytes[index] == UInt8(ascii: "-") { index += 1 }
                    while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 { index += 1 }
                    guard let number = Int(String(decoding: bytes[start..<index], as: UTF8.self)) else {
                        throw fail("expected an array index or a quoted key after '['")
                    }
                    steps.append(.index(number))
                }
                guard index < bytes.count, bytes[index] == UInt8(ascii: "]") else { throw fail("expected ']'") }
                index += 1
                expectKey = false
                continue
            }
            if byte == UInt8(ascii: ".") {
                guard !expectKey, index + 1 < bytes.count else { throw fail("a key is missing around '.'") }
                index += 1
                expectKey = true
                guard bytes[index] != UInt8(ascii: "[") else { throw fail("'[' follows a key directly, not a '.'") }
                continue
            }
            guard expectKey else { throw fail("expected '.' or '[' after ']'") }
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "."), bytes[index] != UInt8(ascii: "[") {
                if bytes[index] == UInt8(ascii: "]") { throw fail("']' without '['") }
                index += 1
            }
            steps.append(.key(String(decoding: bytes[start..<index], as: UTF8.self)))
            expectKey = false
        }
        guard !expectKey else { throw fail("the path ends with '.'") }
        self.steps = steps
        description = text
    }

    /// The value at this path in `value`, or nil when the record does not have it.
    public func value(in value: JSONValue) -> JSONValue? {
        var current = value
        for step in steps {
            switch (step, current) {
            case (.key(let key), .object):
                guard let next = current[key] else { return nil }
                current = next
            case (.key(let key), .array(let items)):
                // A key of digits picks an element too: `coordinates.1`.
                guard Self.isDigits(key), let position = Int(key), position < items.count else { return nil }
                current = items[position]
            case (.index(let position), .array(let items)):
                let resolved = position < 0 ? items.count + position : position
                guard resolved >= 0, resolved < items.count else { return nil }
                current = items[resolved]
            default:
                return nil
            }
        }
        return current
    }
}

/// A pipeline path that cannot be read.
public struct JSONPathError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var column: Int
    public var message: String
    public var description: String { "'\(path)', column \(column): \(message)" }
}
