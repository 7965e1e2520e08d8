import IngestJSON
import IngestStore

/// A record turned into what the importer writes: the root object's attribute values,
/// and for each relationship the related objects to find or create by key.
public struct MappedObject: Sendable, Equatable {
    public var entity: String
    /// Attribute values by name, for every mapped attribute (nil where the record has none).
    public var values: [String: Value?]
    /// The values of the entity's key attributes, in key order (find-or-create by these).
    public var key: [Value]
    public var related: [String: [MappedObject]]
}

/// Maps records with a pipeline's mappings. Pure: it reads no store, so workers run it
/// freely and tests pin every rule down.
public struct RecordMapper: Sendable {
    public let spec: PipelineSpec

    public init(spec: PipelineSpec) { self.spec = spec }

    /// The record as the pipeline's record entity.
    /// - Throws: `CoercionError` with the reason the record is rejected (it names the
    ///   attribute or relationship).
    public func map(_ record: JSONValue) throws -> MappedObject {
        try map(record, as: spec.recordEntity, at: "")
    }

    private func map(_ object: JSONValue, as entity: String, at prefix: String) throws -> MappedObject {
        guard case .object = object else {
            throw CoercionError("\(prefix.isEmpty ? "the record" : prefix) is \(object.kindDescription), not an object")
        }
        let mapping = spec.mappings[entity]!
        let model = spec.model.entity(entity)!
        var values: [String: Value?] = [:]
        for attribute in mapping.attributes {
            let place = prefix + attribute.attribute
            let json = lookup(object, attribute.from)
            var value: Value?
            do {
                if attribute.asJSON, let json, json != .null {
                    value = .string(json.description)
                } else {
                    value = try ValueCoercion.value(json, for: model.attribute(attribute.attribute)!.type, dates: attribute.dates)
                }
            } catch let error as CoercionError {
                throw CoercionError("\(place): \(error.message)")
            }
            if value == nil { value = attribute.defaultValue }
            if value == nil && attribute.required {
                throw CoercionError("\(place): missing required value (from '\(attribute.from.joined(separator: "."))')")
            }
            values[attribute.attribute] = value
        }
        var key: [Value] = []
        for name in mapping.key {
            guard let value = values[name] ?? nil else {
                throw CoercionError("\(prefix + name): missing key value, so the \(entity) cannot be found or created")
            }
            key.append(value)
        }
        var related: [String: [MappedObject]] = [:]
        for relationship in mapping.relationships {
            let place = prefix + relationship.relationship
            let destination = model.relationship(relationship.relationship)!.destination
            guard let json = lookup(object, relationship.from), json != .null else { continue }
            let targets: [JSONValue]
            if case .array(let items) = json {
                guard model.relationship(relationship.relationship)!.isToMany else {
                    throw CoercionError("\(place): a list, but \(entity).\(relationship.relationship) is to-one")
                }
                targets = items
            } else {
                targets = [json]
            }
            related[relationship.relationship] = try targets.enumerated().map { index, target in
                let at = targets.count > 1 || model.relationship(relationship.relationship)!.isToMany ? "\(place)[\(index)]" : place
                return try relatedObject(target, as: destination, at: at)
            }
        }
        return MappedObject(entity: entity, values: values, key: key, related: related)
    }

    /// A related object given whole (a nested object) or by its key alone (an id).
    private func relatedObject(_ json: JSONValue, as entity: String, at place: String) throws -> MappedObject {
        if case .object = json { return try map(json, as: entity, at: place + ".") }
        let mapping = spec.mappings[entity]!
        guard mapping.key.count == 1, let keyAttribute = spec.model.entity(entity)!.attribute(mapping.key[0]) else {
            throw CoercionError("\(place): \(entity) needs a nested object, its key has \(mapping.key.count) attributes")
        }
        let value: Value?
        do {
            value = try ValueCoercion.value(json, for: keyAttribute.type)
        } catch let error as CoercionError {
            throw CoercionError("\(place): \(error.message)")
        }
        guard let value else { throw CoercionError("\(place): missing key value") }
        return MappedObject(entity: entity, values: [keyAttribute.name: value], key: [value], related: [:])
    }

    private func lookup(_ object: JSONValue, _ path: [String]) -> JSONValue? {
        var current: JSONValue? = object
        for key in path { current = current?[key] }
        return current
    }
}
