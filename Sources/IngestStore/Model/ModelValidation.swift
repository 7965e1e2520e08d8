/// Why a model cannot be used. Each case names the entity and property.
public struct ModelError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "invalid model: \(message)" }
}

extension Model {
    /// Names that a store keeps for itself: its own columns and tables start with `_`.
    static func isReserved(_ name: String) -> Bool { name.hasPrefix("_") }

    /// The model, checked: every name valid and unique, every relationship's
    /// destination and inverse present and matching, every default of its attribute's
    /// type, every uniqueness constraint over existing attributes.
    /// - Throws: `ModelError` naming the first problem found.
    public func validated() throws -> Model {
        guard !entities.isEmpty else { throw ModelError("the model has no entities") }
        var seen = Set<String>()
        for entity in entities {
            try Self.checkName(entity.name, what: "entity")
            guard seen.insert(entity.name.lowercased()).inserted else {
                throw ModelError("duplicate entity name '\(entity.name)'")
            }
            var properties = Set<String>()
            for attribute in entity.attributes {
                try Self.checkName(attribute.name, what: "attribute \(entity.name).\(attribute.name)")
                guard properties.insert(attribute.name.lowercased()).inserted else {
                    throw ModelError("duplicate property name '\(entity.name).\(attribute.name)'")
                }
                if let value = attribute.defaultValue, !attribute.type.accepts(value) {
                    throw ModelError("bad default for \(entity.name).\(attribute.name): \(value) is not a valid \(attribute.type.rawValue)")
                }
            }
            for relationship in entity.relationships {
                let label = "\(entity.name).\(relationship.name)"
                try Self.checkName(relationship.name, what: "relationship \(label)")
                guard properties.insert(relationship.name.lowercased()).inserted else {
                    throw ModelError("duplicate property name '\(label)'")
                }
                guard let destination = self.entity(relationship.destination) else {
                    throw ModelError("relationship \(label) has unknown destination '\(relationship.destination)'")
                }
                guard let inverse = destination.relationship(relationship.inverse) else {
                    throw ModelError("relationship \(label) names inverse '\(relationship.inverse)', which \(destination.name) does not have")
                }
                guard inverse.destination == entity.name, inverse.inverse == relationship.name else {
                    throw ModelError("relationship \(label) and its inverse \(destination.name).\(inverse.name) do not point at each other")
                }
            }
            for constraint in entity.uniquenessConstraints {
                guard !constraint.isEmpty else { throw ModelError("an empty uniqueness constraint on \(entity.name)") }
                for name in constraint where entity.attribute(name) == nil {
                    throw ModelError("uniqueness constraint on \(entity.name) names '\(name)', which is not an attribute of \(entity.name)")
                }
            }
        }
        return self
    }

    private static func checkName(_ name: String, what: String) throws {
        guard !name.isEmpty else { throw ModelError("\(what) has an empty name") }
        guard !isReserved(name) else { throw ModelError("\(what): names starting with '_' are reserved") }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0 == "\u{7F}" }) else {
            throw ModelError("\(what): a name cannot hold control characters")
        }
    }
}
