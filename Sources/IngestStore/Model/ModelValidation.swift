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
        // Entities changed in place (`model.entities[i].attributes.append`) inherit again.
        let model = Model(entities: entities)
        try model.checkInheritance()
        return try model.checkedEntities()
    }

    /// Parents exist and form no cycle; inherited properties are not declared again; the
    /// entities of one hierarchy (one table) do not declare the same name twice; a
    /// subentity's uniqueness constraint includes an attribute of its own.
    @_optimize(none)
    private func checkInheritance() throws {
        for entity in entities {
            guard let parent = entity.parent else { continue }
            guard self.entity(parent) != nil else { throw ModelError("entity \(entity.name) has unknown parent '\(parent)'") }
            var seen: Set<String> = [entity.name]
            var current = parent
            while true {
                guard seen.insert(current).inserted else {
                    throw ModelError("entity \(entity.name)'s parents form a cycle (\(seen.sorted().joined(separator: ", ")))")
                }
                guard let next = self.entity(current)?.parent else { break }
                current = next
            }
        }
        for root in entities where root.parent == nil {
            let members = subentities(of: root.name)
            guard members.count > 1 else { continue }
            var owner: [String: String] = [:]
            for name in members {
                let entity = self.entity(name)!
                for property in entity.declaredAttributes.map(\.name) + entity.declaredRelationships.map(\.name) {
                    if let first = owner[property.lowercased()] {
                        let inherited = subentities(of: first).contains(name)
                        throw ModelError(inherited
                            ? "\(name).\(property) is already inherited from \(first)"
                            : "\(first).\(property) and \(name).\(property) would share \(root.name)'s table (one table holds a hierarchy): give them different names")
                    }
                    owner[property.lowercased()] = name
                }
            }
            var codes: [Int64: String] = [:]
            for name in members {
                if let other = codes.updateValue(name, forKey: Self.entityCode(name)) {
                    throw ModelError("entities \(other) and \(name) of \(root.name)'s hierarchy have the same number in its table (\(Self.entityCode(name))): rename one")
                }
            }
            for name in members where name != root.name {
                let entity = self.entity(name)!
                let own = Set(entity.declaredAttributes.map(\.name))
                for constraint in entity.declaredUniquenessConstraints where !constraint.contains(where: own.contains) {
                    throw ModelError("uniqueness constraint on \(name) (\(constraint.joined(separator: ", "))) names only inherited attributes: declare it on the entity that declares them, or include an attribute \(name) declares (its hierarchy shares one table, and one index)")
                }
            }
        }
    }

    @_optimize(none)
    private func checkedEntities() throws -> Model {
        var seen = Set<String>()
        for entity in entities {
            try Self.checkName(entity.name, what: "entity")
            guard seen.insert(entity.name.lowercased()).inserted else {
                throw ModelError("duplicate entity name '\(entity.name)'")
            }
            var properties = Set<String>()
            for attribute in entity.attributes {
                // The importer's lineage attributes (`addingLineage(to:)`) are the store's own names a model may hold.
                if !Self.isLineage(attribute) { try Self.checkName(attribute.name, what: "attribute \(entity.name).\(attribute.name)") }
                guard properties.insert(attribute.name.lowercased()).inserted else {
                    throw ModelError("duplicate property name '\(entity.name).\(attribute.name)'")
                }
                if let value = attribute.defaultValue, !attribute.type.accepts(value) {
                    throw ModelError("bad default for \(entity.name).\(attribute.name): \(value) is not a valid \(attribute.type.rawValue)")
                }
                if let problem = attribute.rules.problem(for: attribute.type) {
                    throw ModelError("rules of \(entity.name).\(attribute.name): \(problem)")
                }
                if attribute.isTransient && attribute.isIndexed {
                    throw ModelError("attribute \(entity.name).\(attribute.name) is transient and indexed: a transient attribute has no column to index")
                }
            }
            for relationship in entity.relationships {
                let label = "\(entity.name).\(relationship.name)"
                try Self.checkName(relationship.name, what: "relationship \(label)")
                guard properties.insert(relationship.name.lowercased()).inserted else {
                    throw ModelError("duplicate property name '\(label)'")
                }
                if relationship.isOrdered && !relationship.isToMany {
                    throw ModelError("relationship \(label) is ordered but to-one: only a to-many keeps an order")
                }
                // Any to-one of the table (the hierarchy's, as SQLite compares column names ignoring case).
                if relationship.name.lowercased().hasSuffix("_order"), !relationship.isToMany,
                   let other = subentities(of: rootEntity(of: entity.name)).compactMap({ self.entity($0) }).flatMap(\.relationships).first(where: {
                       !$0.isToMany && $0.name.lowercased() == relationship.name.lowercased().dropLast(6)
                           && self.entity($0.destination)?.relationship($0.inverse)?.isOrdered == true
                   }) {
                    throw ModelError("relationship \(label): its column would be \(other.name)'s position column (\(other.name)'s inverse is ordered): rename it")
                }
                guard let destination = self.entity(relationship.destination) else {
                    throw ModelError("relationship \(label) has unknown destination '\(relationship.destination)'")
                }
                guard let inverse = destination.relationship(relationship.inverse) else {
                    throw ModelError("relationship \(label) names inverse '\(relationship.inverse)', which \(destination.name) does not have")
                }
                // An inherited relationship's inverse points at the ancestor that declares it.
                guard inverse.destination == declaring(relationship.name, in: entity), inverse.inverse == relationship.name else {
                    throw ModelError("relationship \(label) and its inverse \(destination.name).\(inverse.name) do not point at each other")
                }
            }
            for constraint in entity.uniquenessConstraints {
                guard !constraint.isEmpty else { throw ModelError("an empty uniqueness constraint on \(entity.name)") }
                for name in constraint where entity.attribute(name) == nil {
                    throw ModelError("uniqueness constraint on \(entity.name) names '\(name)', which is not an attribute of \(entity.name)")
                }
                for name in constraint where entity.attribute(name)?.isTransient == true {
                    throw ModelError("uniqueness constraint on \(entity.name) names the transient attribute '\(name)', which the store does not keep")
                }
            }
        }
        return self
    }

    /// The entity in `entity`'s chain of parents (itself included) that declares `relationship`.
    func declaring(_ relationship: String, in entity: Entity) -> String {
        var current = entity
        var seen: Set<String> = [entity.name]
        while !current.declaredRelationships.contains(where: { $0.name == relationship }),
              let parent = current.parent, seen.insert(parent).inserted, let next = self.entity(parent) {
            current = next
        }
        return current.name
    }

    private static func checkName(_ name: String, what: String) throws {
        guard !name.isEmpty else { throw ModelError("\(what) has an empty name") }
        guard !isReserved(name) else { throw ModelError("\(what): names starting with '_' are reserved") }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0 == "\u{7F}" }) else {
            throw ModelError("\(what): a name cannot hold control characters")
        }
    }
}
