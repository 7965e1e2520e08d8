public import Foundation

/// One attribute of an entity.
public struct Attribute: Sendable, Hashable, Codable {
    public var name: String
    public var type: AttributeType
    public var isOptional: Bool
    public var defaultValue: Value?
    public var isIndexed: Bool
    /// A transient attribute (Core Data's "Transient") lives only on managed objects: the
    /// store has no column for it, a save never writes it, and an object that is turned
    /// back into a fault or refreshed takes its default (or nil) again. Setting one is
    /// undone like any change but is no change to save: `hasChanges` does not count it.
    /// Fetches cannot filter or sort on it.
    public var isTransient: Bool
    /// The value rules a save checks (Xcode's minimum, maximum and regular expression).
    public var rules: AttributeRules

    public init(_ name: String, _ type: AttributeType, optional: Bool = true, default defaultValue: Value? = nil,
                indexed: Bool = false, transient: Bool = false, rules: AttributeRules = AttributeRules()) {
        self.name = name
        self.type = type
        self.isOptional = optional
        self.defaultValue = defaultValue
        self.isIndexed = indexed
        self.isTransient = transient
        self.rules = rules
    }
}

/// What happens to related objects when an object is deleted.
public enum DeleteRule: String, Sendable, Codable {
    /// The related objects stay; their side of the relationship forgets the deleted object.
    case nullify
    /// The related objects are deleted too.
    case cascade
    /// The delete fails while any object is related.
    case deny
}

/// One side of a relationship; every relationship has an inverse on its destination.
public struct Relationship: Sendable, Hashable, Codable {
    public var name: String
    public var destination: String
    public var inverse: String
    public var isToMany: Bool
    /// A to-many whose members keep the order they were put in (Core Data's ordered
    /// relationships, an `NSOrderedSet` there): `objects(forKey:)` returns them in order.
    public var isOrdered: Bool
    public var deleteRule: DeleteRule

    public init(_ name: String, to destination: String, inverse: String, toMany: Bool = false, ordered: Bool = false,
                deleteRule: DeleteRule = .nullify) {
        self.name = name
        self.destination = destination
        self.inverse = inverse
        self.isToMany = toMany
        self.isOrdered = ordered
        self.deleteRule = deleteRule
    }
}

/// A kind of object: its attributes, relationships and uniqueness constraints.
///
/// An entity may have a parent (Core Data's "Parent Entity"): it inherits the parent's
/// attributes, relationships and uniqueness constraints, and a fetch of the parent returns
/// its objects too. In a `Model`, `attributes`, `relationships` and `uniquenessConstraints`
/// hold the inherited ones first, then the entity's own (`declaredAttributes`…).
public struct Entity: Sendable, Hashable, Codable {
    public var name: String
    /// The entity this one inherits from, or nil.
    public var parent: String?
    /// An abstract entity has no objects of its own, only its subentities' (Core Data's
    /// "Abstract Entity"): inserting one traps.
    public var isAbstract: Bool
    public var attributes: [Attribute]
    public var relationships: [Relationship]
    /// Each constraint is a set of attribute names whose values together are unique.
    public var uniquenessConstraints: [[String]]
    /// How many of the leading attributes, relationships and constraints come from the parent.
    public internal(set) var inheritedCounts = InheritedCounts()

    /// The leading properties an entity inherits (see `Entity`).
    public struct InheritedCounts: Sendable, Hashable {
        public internal(set) var attributes = 0
        public internal(set) var relationships = 0
        public internal(set) var uniquenessConstraints = 0
    }

    public init(_ name: String, parent: String? = nil, abstract isAbstract: Bool = false, attributes: [Attribute],
                relationships: [Relationship] = [], uniquenessConstraints: [[String]] = []) {
        self.name = name
        self.parent = parent
        self.isAbstract = isAbstract
        self.attributes = attributes
        self.relationships = relationships
        self.uniquenessConstraints = uniquenessConstraints
    }

    /// The attributes this entity declares itself, without the inherited ones.
    public var declaredAttributes: ArraySlice<Attribute> { attributes.dropFirst(inheritedCounts.attributes) }
    /// The relationships this entity declares itself.
    public var declaredRelationships: ArraySlice<Relationship> { relationships.dropFirst(inheritedCounts.relationships) }
    /// The uniqueness constraints this entity declares itself.
    public var declaredUniquenessConstraints: ArraySlice<[String]> {
        uniquenessConstraints.dropFirst(inheritedCounts.uniquenessConstraints)
    }

    public func attribute(_ name: String) -> Attribute? { attributes.first { $0.name == name } }
    /// The attributes the store keeps (all but the transient ones), in order: a row's columns.
    public var storedAttributes: [Attribute] { attributes.filter { !$0.isTransient } }
    public func relationship(_ name: String) -> Relationship? { relationships.first { $0.name == name } }
}

/// The object graph's schema. Build it in code or load it from JSON; `validated()`
/// checks it before a store uses it.
public struct Model: Sendable, Hashable, Codable {
    public var entities: [Entity]

    /// A model of `entities`; subentities get their parents' properties (see `Entity`).
    public init(entities: [Entity]) { self.entities = Self.inheriting(entities) }

    public func entity(_ name: String) -> Entity? { entities.first { $0.name == name } }

    /// Whether any entity has a parent.
    public var hasInheritance: Bool { entities.contains { $0.parent != nil } }

    /// The entity at the top of `name`'s hierarchy (itself when it has no parent).
    public func rootEntity(of name: String) -> String {
        var current = name
        var seen: Set<String> = [name]
        while let parent = entity(current)?.parent, seen.insert(parent).inserted { current = parent }
        return current
    }

    /// `name` (first, when included), then every entity below it, in model order.
    public func subentities(of name: String, includingItself: Bool = true) -> [String] {
        var below: Set<String> = []
        var frontier = [name]
        while let next = frontier.popLast() {
            for child in entities where child.parent == next && child.name != name && !below.contains(child.name) {
                below.insert(child.name)
                frontier.append(child.name)
            }
        }
        return (includingItself ? [name] : []) + entities.map(\.name).filter(below.contains)
    }

    /// The number `_entity` holds for rows of `name` in its hierarchy's table: from the
    /// name alone (32-bit FNV-1a, kept positive), so it stays the same however the model's
    /// entities are ordered or added to. Validation refuses two in one hierarchy that meet.
    public static func entityCode(_ name: String) -> Int64 {
        var hash: UInt32 = 2_166_136_261
        for byte in name.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return Int64(hash & 0x7FFF_FFFF)
    }

    /// Each entity with its parent's properties in front of its own, parents first. Entities
    /// whose parent is missing or in a cycle are left as they are, for `validated()` to name.
    static func inheriting(_ entities: [Entity]) -> [Entity] {
        guard entities.contains(where: { $0.parent != nil || $0.inheritedCounts != Entity.InheritedCounts() }) else { return entities }
        var resolved: [String: Entity] = [:]
        func resolve(_ entity: Entity, _ path: Set<String>) -> Entity {
            if let done = resolved[entity.name] { return done }
            var result = entity
            result.attributes = Array(entity.declaredAttributes)
            result.relationships = Array(entity.declaredRelationships)
            result.uniquenessConstraints = Array(entity.declaredUniquenessConstraints)
            result.inheritedCounts = Entity.InheritedCounts()
            if let parentName = entity.parent, !path.contains(parentName),
               let parent = entities.first(where: { $0.name == parentName }) {
                let base = resolve(parent, path.union([entity.name]))
                result.attributes = base.attributes + result.attributes
                result.relationships = base.relationships + result.relationships
                result.uniquenessConstraints = base.uniquenessConstraints + result.uniquenessConstraints
                result.inheritedCounts = Entity.InheritedCounts(attributes: base.attributes.count, relationships: base.relationships.count,
                                                                uniquenessConstraints: base.uniquenessConstraints.count)
            }
            resolved[entity.name] = result
            return result
        }
        return entities.map { resolve($0, [$0.name]) }
    }

    /// Loads a model from its JSON description (the form `jsonData()` writes). `strict`
    /// (a model a person wrote, in a pipeline) refuses fields it does not know: a typo such
    /// as `"uniqe"` would otherwise drop a constraint without a word. Models kept in stores
    /// are read leniently, as earlier versions wrote them.
    /// - Throws: `ModelError` naming what is wrong, and where.
    public static func load(json: Data, strict: Bool = false) throws -> Model {
        do {
            let decoder = JSONDecoder()
            decoder.userInfo[ModelKeys.strict] = strict
            return try decoder.decode(Model.self, from: json).validated()
        } catch let error as DecodingError {
            throw ModelError(error.plainDescription)
        }
    }

    private enum Keys: String, CodingKey, CaseIterable { case entities }

    public init(from decoder: any Decoder) throws {
        try ModelKeys.refuseUnknown(in: decoder, known: Keys.self)
        entities = Self.inheriting(try decoder.container(keyedBy: Keys.self).decode([Entity].self, forKey: .entities))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(entities, forKey: .entities)
    }

    /// The model as canonical JSON: stable key order, so equal models give equal bytes.
    public func jsonData() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try! encoder.encode(self)
    }

    /// SHA-256 of the canonical JSON, kept in the store to tell models apart.
    public var hash: String {
        SHA256Digest.hex(Array(jsonData()))
    }

    /// The model as the store keeps it: without transient attributes (no column) and
    /// without value rules (a save checks them; the tables do not). Stores record, compare
    /// and migrate this form, so adding a transient attribute or changing a rule needs no
    /// migration. The same model when it has neither.
    public var storedForm: Model {
        guard entities.contains(where: { $0.attributes.contains { $0.isTransient || !$0.rules.isEmpty } }) else { return self }
        return Model(entities: entities.map { entity in
            var stored = Entity(entity.name, parent: entity.parent, abstract: entity.isAbstract,
                                attributes: entity.declaredAttributes.filter { !$0.isTransient }.map { attribute in
                                    var plain = attribute
                                    plain.rules = AttributeRules()
                                    return plain
                                },
                                relationships: Array(entity.declaredRelationships),
                                uniquenessConstraints: Array(entity.declaredUniquenessConstraints))
            stored.inheritedCounts = Entity.InheritedCounts()
            return stored
        })
    }
}

// MARK: - Value coding

extension Value: Codable {
    private enum Kind: String, Codable { case string, int, double, bool, date, binary, uuid, decimal }
    private enum Keys: String, CodingKey { case type, value }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        switch try container.decode(Kind.self, forKey: .type) {
        case .string: self = .string(try container.decode(String.self, forKey: .value))
        case .int: self = .int(try container.decode(Int64.self, forKey: .value))
        case .double: self = .double(try container.decode(Double.self, forKey: .value))
        case .bool: self = .bool(try container.decode(Bool.self, forKey: .value))
        case .date: self = .date(Date(timeIntervalSinceReferenceDate: try container.decode(Double.self, forKey: .value)))
        case .binary:
            guard let data = Data(base64Encoded: try container.decode(String.self, forKey: .value)) else {
                throw DecodingError.dataCorruptedError(forKey: .value, in: container, debugDescription: "not base64")
            }
            self = .binary(Array(data))
        case .uuid: self = .uuid(try container.decode(UUID.self, forKey: .value))
        case .decimal: self = .decimal(try container.decode(String.self, forKey: .value))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .string(let v): try container.encode(Kind.string, forKey: .type); try container.encode(v, forKey: .value)
        case .int(let v): try container.encode(Kind.int, forKey: .type); try container.encode(v, forKey: .value)
        case .double(let v): try container.encode(Kind.double, forKey: .type); try container.encode(v, forKey: .value)
        case .bool(let v): try container.encode(Kind.bool, forKey: .type); try container.encode(v, forKey: .value)
        case .date(let v):
            try container.encode(Kind.date, forKey: .type)
            try container.encode(v.timeIntervalSinceReferenceDate, forKey: .value)
        case .binary(let v): try container.encode(Kind.binary, forKey: .type); try container.encode(Data(v).base64EncodedString(), forKey: .value)
        case .uuid(let v): try container.encode(Kind.uuid, forKey: .type); try container.encode(v, forKey: .value)
        case .decimal(let v): try container.encode(Kind.decimal, forKey: .type); try container.encode(v, forKey: .value)
        }
    }
}

extension Attribute {
    private enum Keys: String, CodingKey, CaseIterable {
        case name, type, optional, defaultValue = "default", indexed, transient
        case minimum = "min", maximum = "max", minimumLength = "minLength", maximumLength = "maxLength", pattern
    }

    public init(from decoder: any Decoder) throws {
        try ModelKeys.refuseUnknown(in: decoder, known: Keys.self)
        let c = try decoder.container(keyedBy: Keys.self)
        name = try c.decode(String.self, forKey: .name)
        type = try c.decode(AttributeType.self, forKey: .type)
        isOptional = try c.decodeIfPresent(Bool.self, forKey: .optional) ?? true
        defaultValue = try c.decodeIfPresent(Value.self, forKey: .defaultValue)
        isIndexed = try c.decodeIfPresent(Bool.self, forKey: .indexed) ?? false
        isTransient = try c.decodeIfPresent(Bool.self, forKey: .transient) ?? false
        rules = AttributeRules(
            minimum: try AttributeRules.decodeBound(c, .minimum, type),
            maximum: try AttributeRules.decodeBound(c, .maximum, type),
            minimumLength: try c.decodeIfPresent(Int.self, forKey: .minimumLength),
            maximumLength: try c.decodeIfPresent(Int.self, forKey: .maximumLength),
            pattern: try c.decodeIfPresent(String.self, forKey: .pattern))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(name, forKey: .name)
        try c.encode(type, forKey: .type)
        try c.encode(isOptional, forKey: .optional)
        try c.encodeIfPresent(defaultValue, forKey: .defaultValue)
        try c.encode(isIndexed, forKey: .indexed)
        // Written only when set: models without them keep their bytes and hash.
        if isTransient { try c.encode(true, forKey: .transient) }
        try AttributeRules.encodeBound(rules.minimum, &c, .minimum)
        try AttributeRules.encodeBound(rules.maximum, &c, .maximum)
        try c.encodeIfPresent(rules.minimumLength, forKey: .minimumLength)
        try c.encodeIfPresent(rules.maximumLength, forKey: .maximumLength)
        try c.encodeIfPresent(rules.pattern, forKey: .pattern)
    }
}

extension Relationship {
    private enum Keys: String, CodingKey, CaseIterable { case name, destination, inverse, toMany, ordered, deleteRule }

    public init(from decoder: any Decoder) throws {
        try ModelKeys.refuseUnknown(in: decoder, known: Keys.self)
        let c = try decoder.container(keyedBy: Keys.self)
        name = try c.decode(String.self, forKey: .name)
        destination = try c.decode(String.self, forKey: .destination)
        inverse = try c.decode(String.self, forKey: .inverse)
        isToMany = try c.decodeIfPresent(Bool.self, forKey: .toMany) ?? false
        isOrdered = try c.decodeIfPresent(Bool.self, forKey: .ordered) ?? false
        deleteRule = try c.decodeIfPresent(DeleteRule.self, forKey: .deleteRule) ?? .nullify
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(name, forKey: .name)
        try c.encode(destination, forKey: .destination)
        try c.encode(inverse, forKey: .inverse)
        try c.encode(isToMany, forKey: .toMany)
        // Written only when set: models without ordered relationships keep their bytes and hash.
        if isOrdered { try c.encode(true, forKey: .ordered) }
        try c.encode(deleteRule, forKey: .deleteRule)
    }
}

extension Entity {
    private enum Keys: String, CodingKey, CaseIterable { case name, parent, abstract, attributes, relationships, unique }

    public init(from decoder: any Decoder) throws {
        try ModelKeys.refuseUnknown(in: decoder, known: Keys.self)
        let c = try decoder.container(keyedBy: Keys.self)
        name = try c.decode(String.self, forKey: .name)
        parent = try c.decodeIfPresent(String.self, forKey: .parent)
        isAbstract = try c.decodeIfPresent(Bool.self, forKey: .abstract) ?? false
        attributes = try c.decodeIfPresent([Attribute].self, forKey: .attributes) ?? []
        relationships = try c.decodeIfPresent([Relationship].self, forKey: .relationships) ?? []
        uniquenessConstraints = try c.decodeIfPresent([[String]].self, forKey: .unique) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(name, forKey: .name)
        // Written only when set: models without inheritance keep the bytes (and the hash) they had.
        try c.encodeIfPresent(parent, forKey: .parent)
        if isAbstract { try c.encode(true, forKey: .abstract) }
        try c.encode(Array(declaredAttributes), forKey: .attributes)
        try c.encode(Array(declaredRelationships), forKey: .relationships)
        try c.encode(Array(declaredUniquenessConstraints), forKey: .unique)
    }
}

/// The strict reading of a model a person wrote (`Model.load(json:strict:)`).
enum ModelKeys {
    static let strict = CodingUserInfoKey(rawValue: "ingest.model.strict")!

    private struct AnyKey: CodingKey {
        var stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    /// The fields a type's coding keys name are its known ones.
    static func refuseUnknown<Keys: CodingKey & CaseIterable>(in decoder: any Decoder, known keys: Keys.Type) throws {
        guard decoder.userInfo[strict] as? Bool == true else { return }
        let known = keys.allCases.map(\.stringValue)
        let container = try decoder.container(keyedBy: AnyKey.self)
        guard let unknown = container.allKeys.first(where: { !known.contains($0.stringValue) }) else { return }
        throw DecodingError.dataCorruptedError(forKey: unknown, in: container,
            debugDescription: "unknown field '\(unknown.stringValue)' (expected \(known.joined(separator: ", ")))")
    }
}
