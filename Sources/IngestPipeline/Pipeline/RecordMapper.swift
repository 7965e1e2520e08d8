import Foundation
public import IngestJSON
public import IngestStore

/// A record turned into what the importer writes: the root object's attribute values,
/// and for each relationship the related objects to find or create by key.
public struct MappedObject: Sendable, Equatable {
    public var entity: String
    /// The mapped attributes' names, in the mapping's order.
    public var names: [String]
    /// Their values, `slots[i]` for `names[i]` (nil where the record has none).
    public var slots: [Value?]
    /// Where each attribute sits in the entity (`Entity.attributes`), for the importer.
    var positions: [Int]
    /// Per slot: the record gives this field (a default fills a slot it does not give).
    var given: [Bool]
    /// The record names this object by its key alone (`"author": 7`), not as an object.
    var byKeyAlone = false
    /// The values of the entity's key attributes, in key order (find-or-create by these).
    public var key: [Value]
    /// Related objects by relationship, in the mapping's order.
    public var relations: [(relationship: String, objects: [MappedObject])]

    /// A mapped object from attribute values by name (sorted by name).
    public init(entity: String, values: [String: Value?], key: [Value], related: [String: [MappedObject]]) {
        self.entity = entity
        let sorted = values.sorted { $0.key < $1.key }
        names = sorted.map(\.key)
        slots = sorted.map(\.value)
        positions = []
        given = Array(repeating: true, count: sorted.count)
        self.key = key
        relations = related.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    init(entity: String, names: [String], slots: [Value?], positions: [Int], given: [Bool], key: [Value],
         relations: [(relationship: String, objects: [MappedObject])]) {
        self.entity = entity
        self.names = names
        self.slots = slots
        self.positions = positions
        self.given = given
        self.key = key
        self.relations = relations
    }

    /// Attribute values by name.
    public var values: [String: Value?] { Dictionary(uniqueKeysWithValues: zip(names, slots)) }
    /// Related objects by relationship name.
    public var related: [String: [MappedObject]] { Dictionary(uniqueKeysWithValues: relations.map { ($0.relationship, $0.objects) }) }

    public static func == (lhs: MappedObject, rhs: MappedObject) -> Bool {
        lhs.entity == rhs.entity && lhs.values == rhs.values && lhs.key == rhs.key && lhs.related == rhs.related
    }
}

/// Maps records with a pipeline's mappings. Pure: it reads no store, so workers run it
/// freely and tests pin every rule down. The mappings are compiled once (types,
/// positions, key slots) so a record costs lookups and conversions only.
public struct RecordMapper: Sendable {
    public let spec: PipelineSpec
    /// The parts of a record the mappings read: parse records with
    /// `JSONValue.parse(_:keeping:)` and the rest is never built.
    public let selection: JSONSelection
    let plans: [String: EntityPlan]
    let recordPlan: EntityPlan

    // Classes, not structs: a record's mapping walks these for every attribute, and a
    // struct would be copied (retaining each of its fields) at every step.
    final class AttributePlan: Sendable {
        let mapping: PipelineSpec.AttributeMapping
        let type: AttributeType
        let position: Int
        let required: Bool
        /// `mapping.from.rest`, worked out once: the getter builds the key prefix (an array of
        /// strings) each time, and the row mapper's slow cases ask for it every record.
        let rest: JSONPath?

        init(mapping: PipelineSpec.AttributeMapping, type: AttributeType, position: Int, required: Bool) {
            self.mapping = mapping
            self.type = type
            self.position = position
            self.required = required
            self.rest = mapping.from.rest
        }
    }

    struct RelationshipPlan: Sendable {
        var name: String
        var from: JSONPath
        var split: String?
        var destination: String
        var isToMany: Bool
        var fields: [PipelineSpec.RelatedField]?
        var keyed: Bool
    }

    final class EntityPlan: Sendable {
        let entity: String
        let names: [String]
        let positions: [Int]
        let attributes: [AttributePlan]
        /// Indices into `attributes` of the key attributes, in key order.
        let keySlots: [Int?]
        let key: [String]
        /// The key attributes' types and positions, mapped or not (an id alone names an object).
        let keyAttributes: [(type: AttributeType, position: Int)]
        let relationships: [RelationshipPlan]

        init(entity: String, names: [String], positions: [Int], attributes: [AttributePlan], keySlots: [Int?], key: [String],
             keyAttributes: [(type: AttributeType, position: Int)], relationships: [RelationshipPlan]) {
            self.entity = entity
            self.names = names
            self.positions = positions
            self.attributes = attributes
            self.keySlots = keySlots
            self.key = key
            self.keyAttributes = keyAttributes
            self.relationships = relationships
        }
    }

    @_optimize(none)
    public init(spec: PipelineSpec) {
        self.spec = spec
        var plans: [String: EntityPlan] = [:]
        for (name, mapping) in spec.mappings {
            let entity = spec.model.entity(name)!
            // Positions among the stored attributes: rows and objects keep no slot for a transient one.
            let stored = entity.storedAttributes
            let attributes = mapping.attributes.map { attribute in
                let modelAttribute = entity.attribute(attribute.attribute)!
                return AttributePlan(mapping: attribute, type: modelAttribute.type,
                                     position: stored.firstIndex { $0.name == attribute.attribute }!,
                                     required: attribute.required)
            }
            let relationships = mapping.relationships.map { relationship in
                let modelRelationship = entity.relationship(relationship.relationship)!
                return RelationshipPlan(name: relationship.relationship, from: relationship.from, split: relationship.split,
                                        destination: modelRelationship.destination, isToMany: modelRelationship.isToMany,
                                        fields: relationship.fields, keyed: relationship.keyed)
            }
            plans[name] = EntityPlan(entity: name, names: attributes.map(\.mapping.attribute), positions: attributes.map(\.position),
                                     attributes: attributes,
                                     keySlots: mapping.key.map { key in attributes.firstIndex { $0.mapping.attribute == key } },
                                     key: mapping.key,
                                     keyAttributes: mapping.key.map { key in
                                         (entity.attribute(key)!.type, stored.firstIndex { $0.name == key }!)
                                     },
                                     relationships: relationships)
        }
        self.plans = plans
        recordPlan = plans[spec.recordEntity]!
        var selection = Self.selection(for: spec.recordEntity, plans: plans, depth: 0)
        if let discriminator = spec.discriminator {
            for entity in discriminator.candidates { selection.keep([], inside: Self.selection(for: entity, plans: plans, depth: 0)) }
            selection.keep(discriminator.field.keyPrefix)
        }
        selection.keep([rowErrorKey])
        self.selection = selection
    }

    /// What mapping an object of `entity` reads; nested objects past a few levels are kept whole.
    private static func selection(for entity: String, plans: [String: EntityPlan], depth: Int) -> JSONSelection {
        guard depth < 4, let plan = plans[entity] else { return .all }
        var selection = JSONSelection.none
        // A path through an array keeps the array whole.
        for attribute in plan.attributes { selection.keep(attribute.mapping.from.keyPrefix) }
        for relationship in plan.relationships {
            if let fields = relationship.fields {
                for field in fields { selection.keep(field.from.keyPrefix) }
            } else if relationship.from.rest == nil, !relationship.keyed {
                selection.keep(relationship.from.keyPrefix, inside: Self.selection(for: relationship.destination, plans: plans, depth: depth + 1))
            } else {
                selection.keep(relationship.from.keyPrefix)
            }
        }
        return selection
    }

    /// The record as the pipeline's record entity.
    /// - Throws: `CoercionError` with the reason the record is rejected (it names the
    ///   attribute or relationship).
    public func map(_ record: JSONValue) throws -> MappedObject {
        // A row that did not fit the header, as the splitter marked it.
        if case .string(let reason)? = record[rowErrorKey] { throw CoercionError(reason) }
        guard let discriminator = spec.discriminator else { return try map(record, as: recordPlan, at: "") }
        return try map(record, as: plans[try entity(of: record, discriminator)]!, at: "")
    }

    /// The entity `discriminator` chooses for `record`.
    private func entity(of record: JSONValue, _ discriminator: PipelineSpec.Discriminator) throws -> String {
        let value: String?
        switch discriminator.field.value(in: record) {
        case .string(let text)?: value = text
        case .number(let text)?: value = text
        case .bool(let flag)?: value = flag ? "true" : "false"
        default: value = nil
        }
        if let value {
            if discriminator.entities.isEmpty {
                if plans[value] != nil { return value }
            } else if let entity = discriminator.entities[value] {
                return entity
            }
        }
        if let otherwise = discriminator.otherwise { return otherwise }
        let named = discriminator.entities.isEmpty ? discriminator.candidates : discriminator.entities.keys.sorted()
        guard let value else {
            throw CoercionError("\(discriminator.field): missing, so the record's entity is unknown (expected one of \(named.joined(separator: ", ")))")
        }
        throw CoercionError("\(discriminator.field): '\(value)' names no entity of the pipeline (expected one of \(named.joined(separator: ", ")))")
    }

    private func map(_ object: JSONValue, as plan: EntityPlan, at prefix: String) throws -> MappedObject {
        guard case .object = object else {
            throw CoercionError("\(prefix.isEmpty ? "the record" : prefix) is \(object.kindDescription), not an object")
        }
        var slots: [Value?] = []
        slots.reserveCapacity(plan.attributes.count)
        var given: [Bool] = []
        given.reserveCapacity(plan.attributes.count)
        for attribute in plan.attributes {
            let json: JSONValue?
            do {
                json = try attribute.mapping.value(in: object)
            } catch let error as CoercionError {
                throw CoercionError("\(prefix + attribute.mapping.attribute): \(error.message)")
            }
            given.append(json != nil)
            var value: Value?
            do {
                if attribute.mapping.asJSON, let json, json != .null {
                    value = .string(json.description)
                } else {
                    value = try ValueCoercion.value(json, for: attribute.type, dates: attribute.mapping.dates,
                                                    timeZone: attribute.mapping.timeZone)
                }
            } catch let error as CoercionError {
                throw CoercionError("\(prefix + attribute.mapping.attribute): \(error.message)")
            }
            if value == nil { value = attribute.mapping.defaultValue }
            if value == nil && attribute.required {
                throw CoercionError("\(prefix + attribute.mapping.attribute): missing required value (from '\(attribute.mapping.from)')")
            }
            slots.append(value)
        }
        var key: [Value] = []
        key.reserveCapacity(plan.keySlots.count)
        for (name, slot) in zip(plan.key, plan.keySlots) {
            guard let slot, let value = slots[slot] else {
                throw CoercionError("\(prefix + name): missing key value, so the \(plan.entity) cannot be found or created")
            }
            key.append(value)
        }
        var relations: [(relationship: String, objects: [MappedObject])] = []
        for relationship in plan.relationships {
            if let fields = relationship.fields {
                // The related object is made of the parent's members; none given, no object.
                let members = fields.compactMap { field in
                    field.from.value(in: object).flatMap { $0 == .null ? nil : JSONMember(field.name, $0) }
                }
                guard !members.isEmpty else { continue }
                let place = prefix + relationship.name
                do {
                    relations.append((relationship.name, [try relatedObject(.object(members), as: relationship.destination, at: place)]))
                } catch let error as CoercionError {
                    // The destination's mapping names the made object's members: say where they came from.
                    let made = fields.map { "\($0.name) ← \($0.from)" }.joined(separator: ", ")
                    throw CoercionError(error.message + " (\(relationship.destination) made of the record's members: \(made))")
                }
                continue
            }
            guard let json = relationship.from.value(in: object), json != .null else { continue }
            let place = prefix + relationship.name
            var targets: [JSONValue]
            if relationship.keyed, case .object(let members) = json {
                // {"por": "Portuguese", …}: one related object per member, named by it.
                targets = members.map { member in
                    if case .object(let fields) = member.value {
                        return .object([JSONMember("@key", .string(member.key))] + fields.filter { $0.key != "@key" })
                    }
                    return .object([JSONMember("@key", .string(member.key)), JSONMember("@value", member.value)])
                }
            } else if let separator = relationship.split, case .string(let text) = json {
                // "red, blue": one related object per piece, named by its key.
                targets = text.components(separatedBy: separator).map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty }.map(JSONValue.string)
            } else if case .array(let items) = json {
                guard relationship.isToMany else {
                    throw CoercionError("\(place): a list, but \(plan.entity).\(relationship.name) is to-one")
                }
                targets = items
            } else {
                targets = [json]
            }
            let objects = try targets.enumerated().map { index, target in
                let at = targets.count > 1 || relationship.isToMany ? "\(place)[\(index)]" : place
                return try relatedObject(target, as: relationship.destination, at: at)
            }
            relations.append((relationship.name, objects))
        }
        return MappedObject(entity: plan.entity, names: plan.names, slots: slots, positions: plan.positions, given: given, key: key,
                            relations: relations)
    }

    /// A related object given whole (a nested object) or by its key alone (an id).
    private func relatedObject(_ json: JSONValue, as entity: String, at place: String) throws -> MappedObject {
        let plan = plans[entity]!
        if case .object = json { return try map(json, as: plan, at: place + ".") }
        guard plan.key.count == 1 else {
            throw CoercionError("\(place): \(entity) needs a nested object, its key has \(plan.key.count) attributes")
        }
        let value: Value?
        do {
            value = try ValueCoercion.value(json, for: plan.keyAttributes[0].type)
        } catch let error as CoercionError {
            throw CoercionError("\(place): \(error.message)")
        }
        guard let value else { throw CoercionError("\(place): missing key value") }
        var object = MappedObject(entity: entity, names: [plan.key[0]], slots: [value], positions: [plan.keyAttributes[0].position],
                                  given: [true], key: [value], relations: [])
        object.byKeyAlone = true
        return object
    }

}
