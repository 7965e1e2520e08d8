import IngestJSON

extension PipelineInference {
    /// What the member names of a map look like: codes (`por`, `EUR`, `pt-BR`), whole
    /// numbers (`2019`), or ids (`5f1d7c2e9a…`, UUIDs). A map's names are all of one kind.
    enum MapKeys: Equatable, CustomStringConvertible {
        case codes, numbers, ids

        init?(_ name: String) {
            let bytes = Array(name.utf8)
            func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }
            func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
            func isHex(_ byte: UInt8) -> Bool { isDigit(byte) || ((byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x66) }
            if !bytes.isEmpty, bytes.count <= 18, bytes.allSatisfy(isDigit) {
                self = .numbers
                return
            }
            // A MongoDB ObjectId, a hash, or a UUID: long, hexadecimal, with digits in it.
            let hex = bytes.filter { $0 != UInt8(ascii: "-") }
            if hex.count >= 16, hex.allSatisfy(isHex), hex.contains(where: isDigit), hex.contains(where: { !isDigit($0) }) {
                self = .ids
                return
            }
            // ISO codes: two or three letters of one case (`por`, `EUR`), a region or script
            // after a dash or underscore (`pt-BR`, `zh_Hant`).
            let head = bytes.prefix { $0 != UInt8(ascii: "-") && $0 != UInt8(ascii: "_") }
            let tail = bytes.dropFirst(head.count)
            guard (2...3).contains(head.count), head.allSatisfy(isLetter),
                  head.allSatisfy({ $0 >= 0x61 }) || head.allSatisfy({ $0 < 0x61 }) else { return nil }
            if !tail.isEmpty {
                let rest = tail.dropFirst()
                guard (2...8).contains(rest.count), rest.allSatisfy({ isLetter($0) || isDigit($0) }) else { return nil }
            }
            self = .codes
        }

        var description: String {
            switch self {
            case .codes: "codes"
            case .numbers: "numbers"
            case .ids: "ids"
            }
        }

        /// The attribute a member's name goes in.
        var attribute: String { self == .codes ? "code" : "key" }
    }
}

extension PipelineInference.Builder {
    /// An object member read as a map keyed by codes or ids: what its members looked like
    /// as related objects (`FieldStats.entries`), and what to say of it.
    struct KeyedMap {
        var keys: PipelineInference.MapKeys
        var entries: ObjectStats
        var distinct: Int
        var objects: Int
        /// The values' shape: "strings", "objects (name, symbol)".
        var values: String
        var plain: Bool
    }

    /// The fewest distinct member names that make a map: fewer may be a small object's optional members.
    static let minimumMapKeys = 3

    /// `field` as a map keyed by codes or ids, or nil when it looks like an object with
    /// members of its own: a map's names are codes or ids of one kind, at least
    /// `minimumMapKeys` of them, none in every object and each object holding at most half
    /// of them on average (a country speaks few of the world's languages), and its values
    /// are of one shape: plain values of one kind, or objects sharing a member.
    @_optimize(none)
    static func keyedMap(_ field: FieldStats) -> KeyedMap? {
        guard let entries = field.entries, let keys = field.mapKeys else { return nil }
        let names = field.nested
        let distinct = names.order.count
        guard distinct >= minimumMapKeys, names.count >= 2 else { return nil }
        var held = 0
        for name in names.order {
            let present = names.fields[name]!.present
            guard present < names.count else { return nil }
            held += present
        }
        guard held * 2 <= distinct * names.count else { return nil }
        if let value = entries.fields["@value"] {
            // Plain values of one kind (nulls aside); a value that is an object or an array makes no map.
            guard value.present == entries.count, value.objects + value.arraysOfObjects + value.arraysOfScalars + value.emptyArrays == 0 else { return nil }
            let numbers = value.ints + value.bigIntegers + value.doubles
            let nonNull = value.nonNull
            let kind: String
            if nonNull == 0 {
                kind = "nulls"
            } else if value.strings == nonNull {
                kind = "strings"
            } else if value.bools == nonNull {
                kind = "booleans"
            } else if numbers == nonNull {
                kind = numbers == value.ints + value.bigIntegers ? "whole numbers" : "numbers"
            } else {
                return nil
            }
            return KeyedMap(keys: keys, entries: entries, distinct: distinct, objects: names.count, values: kind, plain: true)
        }
        let members = entries.order.filter { $0 != "@key" }
        guard members.contains(where: { entries.fields[$0]!.present == entries.count }) else { return nil }
        let shown = members.prefix(3).joined(separator: ", ") + (members.count > 3 ? ", …" : "")
        return KeyedMap(keys: keys, entries: entries, distinct: distinct, objects: names.count, values: "objects (\(shown))", plain: false)
    }

    /// A to-many relationship read from the map with `"keyed": true`, to an entity of its
    /// members found or created by their names; JSON text when a name comes with other
    /// values in other objects (`"scores": {"2019": 5}`), which one object per name would lose.
    @_optimize(none)
    mutating func addMap(_ draft: PipelineInference.Draft, _ map: KeyedMap, member: String, path: String, inRecords: Bool, depth: Int) {
        let childName = PipelineInference.typeName(PipelineInference.singular(member))
        let seen = "a map keyed by \(map.keys) (\(PipelineInference.counted(map.distinct, "distinct key")) in "
            + "\(PipelineInference.counted(map.objects, inRecords ? "record" : "object")), values \(map.values))"
        let choice = Self.keyChoice(of: map.entries, entity: childName)
        guard let childKey = choice.key else {
            addJSON(draft, member, path, seen + ", but " + choice.notKeys.joined(separator: "; ") + ": one object per key would keep one of them")
            return
        }
        // `@key` goes in `code` (or `key`), unless the values have a member of that name.
        let keyName = map.entries.fields[map.keys.attribute] == nil ? map.keys.attribute : "key"
        let child = entity(childName, map.entries, path: "\(draft.name).\(path)", isRecord: false, depth: depth + 1, names: ["@key": keyName])
        relate(draft, child, member: member, from: path, toMany: true, keyed: true)
        let by = childKey == "@key" ? "@key (its name, as \(keyName))" : "'\(childKey)' (which says what its name says)"
        report.append("\(draft.name).\(path): \(seen): a to-many of \(child.name) keyed by \(by)" + (map.plain ? ", its value as value" : ""))
    }
}
