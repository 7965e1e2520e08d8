import Foundation
import IngestJSON
import IngestStore

/// Reading the `mappings` part of a pipeline file.
extension PipelineSpec {
    @_optimize(none)
    static func entityMapping(_ name: String, _ value: JSONValue, model: Model) throws -> EntityMapping {
        let at = "pipeline.mappings.\(name)"
        guard let entity = model.entity(name) else { throw PipelineError(at: at, "the model has no entity '\(name)'") }
        let fields = try Fields(value, at: at, allowed: ["key", "attributes", "relationships", "onConflict"])
        var onConflict = ConflictRule.update
        if let rule = fields.optional("onConflict") {
            let text = try Fields.string(rule, at: "\(at).onConflict")
            guard let parsed = ConflictRule(rawValue: text) else {
                throw PipelineError(at: "\(at).onConflict", "unknown rule '\(text)' (expected \(ConflictRule.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            onConflict = parsed
        }
        var key = entity.uniquenessConstraints.first ?? []
        if let keyValue = fields.optional("key") {
            guard case .array(let items) = keyValue else { throw PipelineError(at: "\(at).key", "expected an array of attribute names") }
            key = try items.map { try Fields.string($0, at: "\(at).key") }
            for attribute in key where entity.attribute(attribute) == nil {
                throw PipelineError(at: "\(at).key", "\(name) has no attribute '\(attribute)'")
            }
        }
        var attributes: [AttributeMapping] = []
        if case .object(let members)? = fields.optional("attributes") {
            // By name, so an entity of many thousands of attributes is not searched once per mapping.
            let named = Dictionary(entity.attributes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            for member in members {
                let place = "\(at).attributes.\(member.key)"
                guard let attribute = named[member.key] else {
                    throw PipelineError(at: place, "\(name) has no attribute '\(member.key)'")
                }
                guard !attribute.isTransient else {
                    throw PipelineError(at: place, "\(name).\(member.key) is transient: the store does not keep it, so an import cannot fill it")
                }
                attributes.append(try attributeMapping(attribute, member.value, at: place))
            }
        } else if fields.optional("attributes") != nil {
            throw PipelineError(at: "\(at).attributes", "expected an object")
        }
        var relationships: [RelationshipMapping] = []
        if case .object(let members)? = fields.optional("relationships") {
            for member in members {
                let place = "\(at).relationships.\(member.key)"
                guard entity.relationship(member.key) != nil else {
                    throw PipelineError(at: place, "\(name) has no relationship '\(member.key)'")
                }
                var from: String
                var toMany = ToManyRule.replace
                var split: String?
                var related: [RelatedField]?
                var keyed = false
                if case .string(let path) = member.value {
                    from = path
                } else if case .object(let detailMembers) = member.value, detailMembers.contains(where: { $0.key == "fields" }) {
                    let details = try Fields(member.value, at: place, allowed: ["fields"])
                    guard !entity.relationship(member.key)!.isToMany else {
                        throw PipelineError(at: "\(place).fields", "an object made of its parent's members is one object: \(name).\(member.key) is to-many")
                    }
                    guard case .object(let fieldMembers)? = details.optional("fields"), !fieldMembers.isEmpty else {
                        throw PipelineError(at: "\(place).fields", "expected an object naming the related object's members and the paths of their values, e.g. {\"name\": \"country\", \"code\": \"alpha_two_code\"}")
                    }
                    related = try fieldMembers.map { field in
                        RelatedField(name: field.key, from: try path(try Fields.string(field.value, at: "\(place).fields.\(field.key)"),
                                                                      at: "\(place).fields.\(field.key)"))
                    }
                    from = related![0].from.description
                } else {
                    let details = try Fields(member.value, at: place, allowed: ["from", "update", "split", "keyed"])
                    if let flag = details.optional("keyed") {
                        keyed = try Fields.bool(flag, at: "\(place).keyed")
                        guard !keyed || entity.relationship(member.key)!.isToMany else {
                            throw PipelineError(at: "\(place).keyed", "an object keyed by codes holds many objects: \(name).\(member.key) is to-one")
                        }
                    }
                    if let separator = details.optional("split") {
                        split = try Fields.string(separator, at: "\(place).split")
                        guard entity.relationship(member.key)!.isToMany, split?.isEmpty == false else {
                            throw PipelineError(at: "\(place).split", "a non-empty separator, for a to-many relationship")
                        }
                    }
                    from = try Fields.string(try details.required("from"), at: "\(place).from")
                    if let rule = details.optional("update") {
                        let text = try Fields.string(rule, at: "\(place).update")
                        guard let parsed = ToManyRule(rawValue: text), entity.relationship(member.key)!.isToMany else {
                            throw PipelineError(at: "\(place).update", "expected replace or merge, for a to-many relationship")
                        }
                        toMany = parsed
                    }
                }
                let fromPath = try related?[0].from ?? path(from, at: "\(place).from")
                let mapping = RelationshipMapping(relationship: member.key, from: fromPath, split: split, toMany: toMany, fields: related,
                                                  keyed: keyed)
                relationships.append(mapping)
            }
        }
        try checkPaths(attributes.map(\.from) + relationships.flatMap { $0.fields?.map(\.from) ?? [$0.from] }, at: at)
        return EntityMapping(entity: name, key: key, attributes: attributes, relationships: relationships, onConflict: onConflict)
    }

    static func path(_ text: String, at place: String) throws -> JSONPath {
        do {
            return try JSONPath(parsing: text)
        } catch let error as JSONPathError {
            throw PipelineError(at: place, "\(error)")
        }
    }

    /// Paths of one mapping that cannot all match: one reads a value as an object (a key
    /// of letters after it) where another reads it as an array (an index after it).
    @_optimize(none)
    static func checkPaths(_ paths: [JSONPath], at place: String) throws {
        var seen: [[JSONPath.Step]: (isArray: Bool, path: JSONPath)] = [:]
        for path in paths {
            for (position, step) in path.steps.enumerated() {
                let prefix = Array(path.steps[..<position])
                let isArray: Bool
                switch step {
                case .index: isArray = true
                case .key(let key): if key.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) && !key.isEmpty { continue } else { isArray = false }
                }
                if let other = seen[prefix], other.isArray != isArray {
                    let (array, object) = isArray ? (path, other.path) : (other.path, path)
                    let name = prefix.isEmpty ? "the record" : JSONPath(steps: prefix, description: "").steps.map { step in
                        switch step {
                        case .key(let key): key
                        case .index(let index): "[\(index)]"
                        }
                    }.joined(separator: ".")
                    throw PipelineError(at: place, "'\(array)' reads \(name) as an array and '\(object)' as an object; no record can match both")
                }
                seen[prefix] = (isArray, path)
            }
        }
    }

    @_optimize(none)
    static func attributeMapping(_ attribute: Attribute, _ value: JSONValue, at place: String) throws -> AttributeMapping {
        if case .string(let path) = value {
            return AttributeMapping(attribute: attribute.name, from: try Self.path(path, at: place),
                                    dates: [.iso8601], defaultValue: attribute.defaultValue, required: !attribute.isOptional, asJSON: false)
        }
        let fields = try Fields(value, at: place, allowed: ["from", "dates", "timeZone", "default", "required", "json", "value", "map", "otherwise", "trim", "case"])
        var transform = ValueTransform()
        transform.constant = fields.optional("value")
        if transform.constant != nil, fields.optional("from") != nil {
            throw PipelineError(at: place, "a constant \"value\" takes no \"from\"")
        }
        let from = transform.constant != nil ? "@constant" : try Fields.string(try fields.required("from"), at: "\(place).from")
        if let table = fields.optional("map") {
            guard case .object(let members) = table, !members.isEmpty else {
                throw PipelineError(at: "\(place).map", "expected an object from the feed's values to the stored ones")
            }
            transform.table = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
        }
        if let otherwise = fields.optional("otherwise") {
            guard transform.table != nil else {
                throw PipelineError(at: "\(place).otherwise", "is what a value \"map\" does not name becomes; there is no \"map\"")
            }
            transform.otherwise = otherwise
        }
        transform.trim = try fields.optional("trim").map { try Fields.bool($0, at: "\(place).trim") } ?? false
        if let letterCase = fields.optional("case") {
            let text = try Fields.string(letterCase, at: "\(place).case")
            guard let parsed = ValueTransform.LetterCase(rawValue: text) else {
                throw PipelineError(at: "\(place).case", "expected lower or upper")
            }
            transform.letterCase = parsed
        }
        var dates: [DateFormat] = [.iso8601]
        if let datesValue = fields.optional("dates") {
            guard case .array(let items) = datesValue, !items.isEmpty else { throw PipelineError(at: "\(place).dates", "expected a list of date formats") }
            dates = try items.map { item in
                let text = try Fields.string(item, at: "\(place).dates")
                switch text {
                case "iso8601": return .iso8601
                case "unix": return .unixSeconds
                case "unixMillis": return .unixMilliseconds
                default:
                    guard text.hasPrefix("pattern:"), text.count > 8 else {
                        throw PipelineError(at: "\(place).dates", "unknown date format '\(text)' (expected iso8601, unix, unixMillis or pattern:…)")
                    }
                    return .pattern(String(text.dropFirst(8)))
                }
            }
        }
        var timeZone: TimeZone?
        if let zone = fields.optional("timeZone") {
            let text = try Fields.string(zone, at: "\(place).timeZone")
            guard attribute.type == .date else { throw PipelineError(at: "\(place).timeZone", "only a date attribute has a time zone") }
            guard let parsed = Self.timeZone(text) else {
                throw PipelineError(at: "\(place).timeZone", "unknown time zone '\(text)' (expected UTC, an offset such as +02:00, or a name such as Europe/Paris)")
            }
            timeZone = parsed
        }
        var defaultValue = attribute.defaultValue
        if let given = fields.optional("default") {
            do {
                defaultValue = try ValueCoercion.value(given, for: attribute.type, dates: dates, timeZone: timeZone)
            } catch let error as CoercionError {
                throw PipelineError(at: "\(place).default", "\(Self.naming(error.message, attribute.type))")
            }
        }
        let required = try fields.optional("required").map { try Fields.bool($0, at: "\(place).required") } ?? !attribute.isOptional
        let asJSON = try fields.optional("json").map { try Fields.bool($0, at: "\(place).json") } ?? false
        if asJSON && attribute.type != .string { throw PipelineError(at: "\(place).json", "only a string attribute can hold JSON text") }
        var mapping = AttributeMapping(attribute: attribute.name, from: try path(from, at: "\(place).from"), dates: dates,
                                       timeZone: timeZone, defaultValue: defaultValue, required: required, asJSON: asJSON)
        mapping.transform = transform
        if let constant = transform.constant {
            do {
                _ = try ValueCoercion.value(constant, for: attribute.type, dates: dates, timeZone: timeZone)
            } catch let error as CoercionError {
                throw PipelineError(at: "\(place).value", "\(Self.naming(error.message, attribute.type))")
            }
        }
        return mapping
    }

    /// `UTC`, `Z`, an offset (`+02:00`, `-0500`, `+02`) or an IANA name (`Europe/Paris`).
    @_optimize(none)
    static func timeZone(_ text: String) -> TimeZone? {
        if text == "UTC" || text == "Z" { return TimeZone(secondsFromGMT: 0) }
        let bytes = Array(text.utf8)
        if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            let digits = bytes.dropFirst().filter { $0 != UInt8(ascii: ":") }
            guard digits.count == 2 || digits.count == 4, digits.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            let hours = Int(digits[digits.startIndex] - 48) * 10 + Int(digits[digits.startIndex + 1] - 48)
            let minutes = digits.count == 4 ? Int(digits[digits.startIndex + 2] - 48) * 10 + Int(digits[digits.startIndex + 3] - 48) : 0
            guard hours < 24, minutes < 60 else { return nil }
            return TimeZone(secondsFromGMT: (sign == UInt8(ascii: "-") ? -1 : 1) * (hours * 3600 + minutes * 60))
        }
        return TimeZone(identifier: text)
    }

    /// A coercion's message with the type it was for, named once.
    static func naming(_ message: String, _ type: AttributeType) -> String {
        message.hasSuffix(" for \(type.rawValue)") ? message : message + " for \(type.rawValue)"
    }
}
