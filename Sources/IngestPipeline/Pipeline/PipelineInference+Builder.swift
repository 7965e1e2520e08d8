import Foundation
import IngestJSON
import IngestStore

extension PipelineInference {
    /// An entity being drafted from what the sample holds.
    final class Draft {
        struct Attribute {
            var name: String
            var type: AttributeType
            var from: String
            var dates: [String]?
            var json = false
        }

        struct Relationship {
            var name: String
            var destination: String
            var inverse: String
            var toMany: Bool
            /// Where the record holds it; nil for an inverse (not mapped).
            var from: String?
            /// Read from an object keyed by codes, one related object per member.
            var keyed = false
        }

        let name: String
        /// The paths of the key's members: none, one, or two for a key of two members.
        var key: [String] = []
        /// Attribute names wanted for members other than their own (`@key` as `code`).
        var wantedNames: [String: String] = [:]
        private(set) var attributes: [Attribute] = []
        private(set) var relationships: [Relationship] = []
        /// The names taken, lowercased, and the paths mapped: a feed may have hundreds of
        /// thousands of members, so each new one is checked in constant time, not against all before it.
        private var takenNames: Set<String> = []
        private var mappedPaths: Set<String> = []

        init(name: String) { self.name = name }

        func add(_ attribute: Attribute) {
            attributes.append(attribute)
            takenNames.insert(attribute.name.lowercased())
            mappedPaths.insert(attribute.from)
        }

        func add(_ relationship: Relationship) {
            relationships.append(relationship)
            takenNames.insert(relationship.name.lowercased())
            if let from = relationship.from { mappedPaths.insert(from) }
        }

        /// Whether an attribute or relationship already comes from `path`.
        func maps(_ path: String) -> Bool { mappedPaths.contains(path) }

        /// `wanted`, or `wanted2`, `wanted3`… when taken. Names differing only in case clash:
        /// SQL column names ignore case (`{"x":1,"X":2}` gives x and X2).
        func freeName(_ wanted: String) -> String {
            var name = wanted
            var number = 2
            while takenNames.contains(name.lowercased()) {
                name = wanted + String(number)
                number += 1
            }
            return name
        }
    }

    struct Builder {
        var report: [String]
        private(set) var drafts: [Draft] = []
        /// Each draft by its name lowercased (entity names differing only in case clash as
        /// table names do).
        private var draftsByName: [String: Draft] = [:]
        static let maxDepth = 3

        init(report: [String]) { self.report = report }

        /// The entity for objects like `stats`, its attributes and related entities drafted.
        @_optimize(none)
        mutating func entity(_ wanted: String, _ stats: ObjectStats, path: String, isRecord: Bool, depth: Int,
                             names: [String: String] = [:]) -> Draft {
            let choice = Self.keyChoice(of: stats, entity: wanted, consistent: !isRecord, noun: isRecord ? "records" : "objects")
            let key = choice.paths
            // The same name met again with the same key (an actor in two kinds of event): one entity.
            if !isRecord, let existing = draftsByName[wanted.lowercased()], existing.name == wanted, existing.key == key {
                fill(existing, stats, prefix: "", from: "", depth: depth)
                return existing
            }
            var name = wanted
            var number = 2
            while draftsByName[name.lowercased()] != nil {
                name = wanted + String(number)
                number += 1
            }
            let draft = Draft(name: name)
            draft.key = key
            draft.wantedNames = names
            drafts.append(draft)
            draftsByName[name.lowercased()] = draft
            let place = isRecord ? PipelineInference.counted(stats.count, "record") : "\(stats.count) objects at \(path)"
            if !key.isEmpty {
                let named = key.map { "'\($0)'" }.joined(separator: " and ") + (key.count > 1 ? " together" : "")
                var line = "\(name): \(place) sampled; \(isRecord ? "unique by" : "found or created by") \(named) (\(choice.evidence))"
                if isRecord, let single = choice.key, let repeats = stats.conflicts[single], !repeats.isEmpty {
                    line += "; \(repeats.count) of its values came again with other content in the sample: a later record with the same \(single) updates the earlier one"
                }
                report.append(([line] + choice.notKeys).joined(separator: "; "))
            } else {
                // Said as seen: members that are there but no key are named with the reason.
                let none = choice.notKeys.isEmpty
                    ? "no id-like field (id, _id, uuid, key, code, \(name.prefix(1).lowercased() + name.dropFirst())Id)"
                        + (isRecord ? " and none named like an identity (url, email, isbn, cca3, …)," : ",")
                    : "no key (" + choice.notKeys.joined(separator: "; ") + "),"
                report.append("\(name): \(place) sampled; \(none) so no uniqueness: every record is a new object. Importing the same feed again is skipped, but another feed that repeats these records adds them again")
            }
            if stats.withRepeatedMembers > 0, let member = stats.firstRepeatedMember {
                report.append("\(name): \(stats.withRepeatedMembers) of the \(isRecord ? "\(stats.count) records" : place) sampled give a member twice ('\(member)'\(stats.withRepeatedMembers > 1 ? ", among others" : "")): the last value counts, here and when importing")
            }
            fill(draft, stats, prefix: "", from: "", depth: depth)
            return draft
        }

        /// Drafts an attribute or relationship for each member of `stats` (members of a
        /// flattened object get `prefix` and `from` before their own names).
        @_optimize(none)
        mutating func fill(_ draft: Draft, _ stats: ObjectStats, prefix: String, from: String, depth: Int) {
            for member in stats.order {
                let field = stats.fields[member]!
                let path = Self.path(from, member)
                // Named by where the member is in the object (payload.forkee), not by the attribute it becomes.
                let label = "\(draft.name).\(path)"
                if draft.maps(path) { continue }
                let nonNull = field.nonNull
                if field.objects > 0 && field.objects == nonNull {
                    if field.isObjectID {
                        addObjectID(draft, prefix + member, path, field)
                        continue
                    }
                    if depth + 1 <= Self.maxDepth, let map = Self.keyedMap(field) {
                        addMap(draft, map, member: prefix + member, path: path, inRecords: draft === drafts.first, depth: depth)
                        continue
                    }
                    let choice = Self.keyChoice(of: field.nested, entity: PipelineInference.typeName(PipelineInference.singular(member)))
                    if let childKey = choice.key, depth + 1 <= Self.maxDepth {
                        let child = entity(PipelineInference.typeName(PipelineInference.singular(member)), field.nested,
                                           path: "\(draft.name).\(path)", isRecord: false, depth: depth + 1)
                        relate(draft, child, member: prefix + member, from: path, toMany: false)
                        report.append("\(label): nested objects with '\(childKey)' → to-one relationship to \(child.name)")
                    } else if depth + 1 <= Self.maxDepth {
                        let why = choice.notKeys.isEmpty ? "nested objects without an id-like field"
                            : "nested objects whose " + choice.notKeys.joined(separator: "; ") + " (unsure, so each stays with its record)"
                        report.append("\(label): \(why) → flattened into \(draft.name) as \(PipelineInference.attributeName(prefix + member))_…")
                        fill(draft, field.nested, prefix: prefix + member + "_", from: path, depth: depth + 1)
                    } else {
                        addJSON(draft, prefix + member, path, "nested deeper than \(Self.maxDepth) levels")
                    }
                    continue
                }
                if field.arraysOfObjects > 0 && field.arraysOfObjects + field.emptyArrays == nonNull {
                    let childName = PipelineInference.typeName(PipelineInference.singular(member))
                    let choice = Self.keyChoice(of: field.elements, entity: childName)
                    if let childKey = choice.key, depth + 1 <= Self.maxDepth {
                        let child = entity(childName, field.elements, path: "\(draft.name).\(path)[]", isRecord: false, depth: depth + 1)
                        relate(draft, child, member: prefix + member, from: path, toMany: true)
                        report.append("\(label): arrays of objects with '\(childKey)' → to-many relationship to \(child.name)")
                    } else {
                        addJSON(draft, prefix + member, path, choice.notKeys.isEmpty ? "arrays of objects without an id-like field"
                            : "arrays of objects whose " + choice.notKeys.joined(separator: "; ") + " (unsure, so they stay with their record)")
                    }
                    continue
                }
                if field.arraysOfScalars + field.emptyArrays > 0 || field.objects > 0 || field.arraysOfObjects > 0 {
                    addJSON(draft, prefix + member, path, Self.arraysAndMixed(field))
                    continue
                }
                addScalar(draft, prefix + member, path, field, label: label)
            }
        }

        @_optimize(none)
        mutating func addScalar(_ draft: Draft, _ member: String, _ path: String, _ field: FieldStats, label: String) {
            let name = draft.freeName(draft.wantedNames[member] ?? PipelineInference.attributeName(member))
            let nonNull = field.nonNull
            var type = AttributeType.string
            var dates: [String]?
            var why: String
            // Whole numbers beyond 64 bits are numbers too (found by probing: 1, 2.5 and one
            // of them were counted as "0 strings, 2 numbers").
            let numbers = field.ints + field.bigIntegers + field.doubles
            func counted(_ count: Int, _ noun: String) -> String { PipelineInference.counted(count, noun) }
            if nonNull == 0 {
                why = "always null in the sample → string (could not decide; edit the type if you know it)"
            } else if field.bools == nonNull {
                type = .bool
                why = "bool (\(nonNull) true/false)"
            } else if field.ints == nonNull {
                let timeLike = ["time", "date", "_at", "At", "stamp", "created", "updated", "modified"].contains { member.contains($0) }
                if timeLike && field.minNumber >= 1e8 && field.maxNumber <= 4.2e9 {
                    type = .date
                    dates = ["unix"]
                    why = "date (\(counted(nonNull, "whole number")) in the range of Unix seconds, in a field named like a time)"
                } else if timeLike && field.minNumber >= 1e11 && field.maxNumber <= 4.2e12 {
                    type = .date
                    dates = ["unixMillis"]
                    why = "date (\(counted(nonNull, "whole number")) in the range of Unix milliseconds, in a field named like a time)"
                } else {
                    type = .int64
                    why = "int64 (\(counted(nonNull, "whole number")))"
                }
            } else if field.bigIntegers > 0 && field.ints + field.bigIntegers == nonNull {
                type = .decimal
                why = "decimal (\(nonNull) whole numbers, \(field.bigIntegers) of them beyond 64 bits, up to \(field.largestBigInteger): kept exactly as decimal text, as no int64 or double holds them)"
            } else if field.hugeNumbers > 0 && numbers == nonNull {
                type = .decimal
                why = "decimal (\(nonNull) numbers, \(field.hugeNumbers) of them beyond a double's range: kept exactly as decimal text)"
            } else if field.bigIntegers > 0 && numbers == nonNull {
                // A double would round the whole number beyond 64 bits.
                type = .decimal
                why = "decimal (\(nonNull) numbers, \(counted(field.bigIntegers, "whole number")) beyond 64 bits (up to \(field.largestBigInteger)) and \(counted(field.doubles, "other number")): kept exactly as decimal text, as no int64 or double holds them all)"
            } else if field.ints > 0 && field.ints + field.integerStrings == nonNull {
                type = .int64
                why = "int64 (\(counted(field.ints, "whole number")), \(counted(field.integerStrings, "string")) of digits, which convert exactly)"
            } else if field.ints > 0 && field.inexactIntegerStrings > 0 && field.ints + field.integerStrings + field.inexactIntegerStrings == nonNull,
                      let example = field.firstInexactIntegerString {
                let number = Int64(example.trimmingCharacters(in: .whitespaces)).map(String.init) ?? example
                let strings = field.integerStrings + field.inexactIntegerStrings
                why = "string (\(counted(field.ints, "whole number")), \(counted(strings, "string")) of digits, \(field.inexactIntegerStrings) of which would not convert exactly: \(JSONValue.string(example)) would become \(number); all are kept as text, the numbers as written)"
            } else if numbers == nonNull {
                type = .double
                why = field.ints == 0 ? "double (\(counted(field.doubles, "number")))"
                    : "double (\(counted(field.ints, "whole number")) and \(counted(field.doubles, "other number")))"
            } else if field.strings == nonNull && field.isoDates == nonNull {
                type = .date
                dates = ["iso8601"]
                why = "date (\(nonNull) ISO 8601 strings)"
            } else if field.strings == nonNull {
                why = "string (\(counted(nonNull, "string"))\(field.isoDates > 0 ? "; \(field.isoDates) look like dates, the rest do not" : ""))"
            } else {
                why = "string (could not decide: \(counted(field.strings, "string")), \(counted(numbers, "number")), \(counted(field.bools, "boolean")); all are kept as text)"
            }
            if field.nulls > 0 { why += ", \(field.nulls) null" }
            draft.add(Draft.Attribute(name: name, type: type, from: path, dates: dates))
            report.append("\(label): \(why)")
        }

        /// What a member kept as JSON text held: arrays of plain values (and what they
        /// hold), empty arrays, or values of mixed kinds.
        static func arraysAndMixed(_ field: FieldStats) -> String {
            let arrays = field.arraysOfScalars + field.arraysOfObjects + field.emptyArrays
            guard arrays == field.nonNull else { return "values of mixed kinds (\(field.kinds.description))" }
            let empty = PipelineInference.counted(field.emptyArrays, "empty array")
            guard field.arraysOfScalars > 0 else { return field.arraysOfObjects > 0 ? "values of mixed kinds (\(field.kinds.description))" : "only empty arrays (\(empty))" }
            let items = field.scalarArrayItems
            let plain = items.objects + items.arrays == 0
            return (plain ? "arrays of plain values (" : "arrays of mixed values (")
                + "\(PipelineInference.counted(field.arraysOfScalars, "array")) holding \(items.description)"
                + (field.arraysOfObjects > 0 ? ", \(PipelineInference.counted(field.arraysOfObjects, "array")) of objects" : "")
                + (field.emptyArrays > 0 ? ", \(empty)" : "") + ")"
        }

        mutating func addJSON(_ draft: Draft, _ member: String, _ path: String, _ why: String) {
            let name = draft.freeName(PipelineInference.attributeName(member))
            draft.add(Draft.Attribute(name: name, type: .string, from: path, json: true))
            report.append("\(draft.name).\(member): \(why) → JSON text in the string attribute \(name)")
        }

        /// Says when entities made under different member names have the same key and
        /// attributes (actor, owner, user and assignee, each with id and login): probably one
        /// kind of object, which the pipeline can make one entity.
        @_optimize(none)
        mutating func noteLookalikes() {
            struct Look: Hashable {
                var key: [String]
                var shape: Set<String>
            }
            var groups: [[Draft]] = []
            var groupOf: [Look: Int] = [:]
            for draft in drafts {
                let key = draft.key
                guard !key.isEmpty else { continue }
                let look = Look(key: key, shape: Set(draft.attributes.map(\.name)))
                if let index = groupOf[look] {
                    groups[index].append(draft)
                } else {
                    groupOf[look] = groups.count
                    groups.append([draft])
                }
            }
            for group in groups where group.count > 1 {
                let names = group.map(\.name)
                let list = names.dropLast().joined(separator: ", ") + " and " + names.last!
                let fields = group[0].attributes.map(\.name).sorted().joined(separator: ", ")
                report.append("\(list): the same fields (\(fields)), unique by \(group[0].key.map { "'\($0)'" }.joined(separator: " and ")): likely one kind of object under \(group.count) member names. "
                    + "To keep them as one entity, make \(names[0]) the destination of their relationships (and its inverses) in the pipeline, and remove \(names.dropFirst().joined(separator: ", "))")
            }
        }

        func relate(_ owner: Draft, _ child: Draft, member: String, from: String, toMany: Bool, keyed: Bool = false) {
            let name = owner.freeName(PipelineInference.attributeName(member))
            let inverseWanted = PipelineInference.plural(PipelineInference.attributeName(owner.name.prefix(1).lowercased() + owner.name.dropFirst()))
            let inverse = child.freeName(inverseWanted)
            owner.add(Draft.Relationship(name: name, destination: child.name, inverse: inverse, toMany: toMany, from: from, keyed: keyed))
            // The inverse is to-many: an author has many posts, a tag many posts.
            child.add(Draft.Relationship(name: inverse, destination: owner.name, inverse: name, toMany: true, from: nil))
        }

        /// `from` followed by `key`, quoted when the key holds path syntax.
        static func path(_ from: String, _ key: String) -> String {
            let plain = !key.isEmpty && !key.contains(where: { $0 == "." || $0 == "[" || $0 == "]" || $0 == "\"" || $0 == "'" })
            if plain { return from.isEmpty ? key : from + "." + key }
            return from + "[" + JSONValue.string(key).description + "]"
        }
    }
}
