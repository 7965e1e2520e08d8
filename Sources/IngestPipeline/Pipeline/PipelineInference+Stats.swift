import Foundation
import IngestJSON

/// What one member looked like across the sample.
final class FieldStats {
    var present = 0, nulls = 0, bools = 0, ints = 0, doubles = 0, strings = 0, isoDates = 0
    /// Strings of digits that print back as themselves as a number ("7"), and those that
    /// would not ("01234", "+7", " 8", "-0"), with the first of these.
    var integerStrings = 0, inexactIntegerStrings = 0
    var firstInexactIntegerString: String?
    /// Whole numbers beyond 64 bits, and numbers a double cannot hold: exact only as decimal text.
    var bigIntegers = 0, hugeNumbers = 0
    var largestBigInteger = ""
    var objects = 0, arraysOfObjects = 0, arraysOfScalars = 0, emptyArrays = 0
    /// What the arrays that are not all objects hold, and how many items in all.
    var scalarArrayItems = ValueKinds()
    var minNumber = Double.infinity, maxNumber = -Double.infinity
    let nested = ObjectStats()
    let elements = ObjectStats()
    /// The objects seen as maps keyed by codes, one entry per member: nil once a member
    /// name is no code or id (`PipelineInference.MapKeys`), or the names are of two kinds.
    private(set) var entries: ObjectStats?
    private(set) var mapKeys: PipelineInference.MapKeys?
    private var notAMap = false

    func observe(_ value: JSONValue) {
        present += 1
        switch value {
        case .null: nulls += 1
        case .bool: bools += 1
        case .number(let text):
            if Int64(text) != nil {
                ints += 1
            } else if text.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || $0 == 45 }) {
                bigIntegers += 1
                if text.count > largestBigInteger.count || (text.count == largestBigInteger.count && text > largestBigInteger) { largestBigInteger = text }
            } else {
                doubles += 1
                if Double(text)?.isFinite != true { hugeNumbers += 1 }
            }
            if let number = Double(text) {
                minNumber = min(minNumber, number)
                maxNumber = max(maxNumber, number)
            }
        case .string(let text):
            strings += 1
            // Only text the number gives back converts exactly: "01234" as 1234 loses its zero.
            if let number = Int64(text), String(number) == text {
                integerStrings += 1
            } else if text.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || $0 == 43 || $0 == 45 || $0 == 32 || $0 == 9 }),
                      Int64(text.trimmingCharacters(in: .whitespaces)) != nil {
                inexactIntegerStrings += 1
                if firstInexactIntegerString == nil { firstInexactIntegerString = text }
            }
            if text.count >= 10, ValueCoercion.iso8601(text) != nil { isoDates += 1 }
        case .object(let members):
            objects += 1
            nested.observe(value)
            observeEntries(members)
        case .array(let items):
            if items.isEmpty {
                emptyArrays += 1
            } else if items.allSatisfy({ if case .object = $0 { true } else { false } }) {
                arraysOfObjects += 1
                for item in items { elements.observe(item) }
            } else {
                arraysOfScalars += 1
                for item in items { scalarArrayItems.count(item) }
            }
        }
    }

    var nonNull: Int { present - nulls }

    /// Each member of an object whose names are all codes or ids of one kind, as the
    /// object a keyed relationship reads it as: its name under `@key`, beside its value's
    /// members or its plain value under `@value` (as `RecordMapper` makes them).
    private func observeEntries(_ members: [JSONMember]) {
        guard !notAMap else { return }
        for member in members {
            guard let kind = PipelineInference.MapKeys(member.key), mapKeys == nil || mapKeys == kind else {
                notAMap = true
                entries = nil
                return
            }
            mapKeys = kind
        }
        let entries = self.entries ?? ObjectStats()
        self.entries = entries
        for member in members {
            let name = JSONMember("@key", .string(member.key))
            if case .object(let fields) = member.value {
                entries.observe(.object([name] + fields.filter { $0.key != "@key" }))
            } else {
                entries.observe(.object([name, JSONMember("@value", member.value)]))
            }
        }
    }

    /// Objects that are all MongoDB ObjectIds as an export writes them (`{"$oid": "5f…"}`).
    var isObjectID: Bool {
        objects > 0 && objects == nonNull && nested.order == ["$oid"] && nested.fields["$oid"]!.strings == objects
    }

    /// The values seen, by kind.
    var kinds: ValueKinds {
        ValueKinds(wholeNumbers: ints + bigIntegers, otherNumbers: doubles, strings: strings, booleans: bools, nulls: nulls,
                   objects: objects, arrays: arraysOfObjects + arraysOfScalars + emptyArrays)
    }
}

/// Values counted by kind, to say what was seen: "1 whole number and 2 strings".
struct ValueKinds {
    var wholeNumbers = 0, otherNumbers = 0, strings = 0, booleans = 0, nulls = 0, objects = 0, arrays = 0

    mutating func count(_ value: JSONValue) {
        switch value {
        case .null: nulls += 1
        case .bool: booleans += 1
        case .number(let text):
            if text.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || $0 == 45 }) { wholeNumbers += 1 } else { otherNumbers += 1 }
        case .string: strings += 1
        case .object: objects += 1
        case .array: arrays += 1
        }
    }

    var total: Int { wholeNumbers + otherNumbers + strings + booleans + nulls + objects + arrays }

    /// The kinds seen, most first: "2 strings and 1 whole number".
    var description: String {
        let parts = [(wholeNumbers, "whole number"), (otherNumbers, "other number"), (strings, "string"), (booleans, "boolean"),
                     (nulls, "null"), (objects, "object"), (arrays, "array")]
            .enumerated().filter { $0.element.0 > 0 }
            .sorted { $0.element.0 != $1.element.0 ? $0.element.0 > $1.element.0 : $0.offset < $1.offset }
            .map { PipelineInference.counted($0.element.0, $0.element.1) }
        return PipelineInference.list(parts)
    }
}

extension PipelineInference {
    /// "1 string", "2 strings": a count and its noun (`plural` when adding an s will not do).
    static func counted(_ count: Int, _ noun: String, _ plural: String? = nil) -> String {
        "\(count) " + (count == 1 ? noun : plural ?? noun + "s")
    }

    /// "a", "a and b", "a, b and c".
    static func list(_ items: [String]) -> String {
        items.count <= 2 ? items.joined(separator: " and ") : items.dropLast().joined(separator: ", ") + " and " + items.last!
    }
}

/// The members of the objects seen at one place, in first-seen order.
final class ObjectStats {
    var count = 0
    /// For records: what tells a key besides an id (`RecordKeyStats`).
    let keyStats: RecordKeyStats?

    init(records: Bool = false) {
        keyStats = records ? RecordKeyStats() : nil
    }

    var order: [String] = []
    var fields: [String: FieldStats] = [:]
    /// For each id-like member: each of its values, with the content of the first object
    /// that had it (hashed), to tell a key from an id that is unique only within a record.
    private var contents: [String: [String: Int]] = [:]
    /// Per id-like member: the values seen with two different contents.
    private(set) var conflicts: [String: Set<String>] = [:]
    /// Objects that gave a member twice, and the first such member seen.
    private(set) var withRepeatedMembers = 0
    /// Objects of a keyed map whose `id` says what their `@key` says (`"7": {"id": 7}`).
    private(set) var idIsKey = 0
    private(set) var firstRepeatedMember: String?

    /// Members that may name an object: what `Builder.key` considers.
    static func isIDLike(_ name: String) -> Bool {
        idNames.contains(name) || name.hasSuffix("Id") || name.hasSuffix("_id") || name.hasSuffix("ID")
    }

    private static let idNames: Set<String> = ["@key", "id", "_id", "uuid", "guid", "key", "code", "slug"]

    func observe(_ value: JSONValue) {
        guard case .object(var members) = value else { return }
        count += 1
        // A member given twice counts once, with its last value: the one an import keeps.
        var last: [String: Int] = [:]
        for (index, member) in members.enumerated() { last[member.key] = index }
        if last.count < members.count {
            withRepeatedMembers += 1
            if firstRepeatedMember == nil {
                firstRepeatedMember = members.enumerated().first { last[$0.element.key] != $0.offset }?.element.key
            }
            members = members.enumerated().filter { last[$0.element.key] == $0.offset }.map(\.element)
        }
        var content: Int?
        func text(_ value: JSONValue?) -> String? {
            switch value {
            case .string(let string)?: string
            case .number(let number)?: number
            default: nil
            }
        }
        if let key = text(members.last(where: { $0.key == "@key" })?.value), key == text(members.last(where: { $0.key == "id" })?.value) {
            idIsKey += 1
        }
        keyStats?.observe(members)
        for member in members where Self.isIDLike(member.key) {
            let text: String
            var name = member.key
            switch member.value {
            case .string(let string): text = "s" + string
            case .number(let number): text = "n" + number
            // A MongoDB export's ObjectId: the key is the string inside.
            case .object(let inner) where inner.count == 1 && inner[0].key == "$oid":
                guard case .string(let string) = inner[0].value else { continue }
                text = "s" + string
                name += ".$oid"
            default: continue
            }
            if content == nil {
                var hasher = Hasher()
                // The value itself, not its text: a sample of a whole feed hashes every record.
                hasher.combine(value)
                content = hasher.finalize()
            }
            if let seen = contents[name, default: [:]][text] {
                if seen != content { conflicts[name, default: []].insert(String(text.dropFirst())) }
            } else {
                contents[name, default: [:]][text] = content
            }
        }
        for member in members {
            let stats: FieldStats
            if let known = fields[member.key] {
                stats = known
            } else {
                stats = FieldStats()
                fields[member.key] = stats
                order.append(member.key)
            }
            stats.observe(member.value)
        }
    }
}

