import Foundation

/// A quoted SQL identifier. Identifiers come only from a validated model; quoting
/// (with embedded quotes doubled) keeps keywords, spaces and quotes in names harmless.
func quoted(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

/// How one relationship is kept in the tables.
enum RelationshipStorage: Sendable {
    /// A foreign-key column on this entity's table (to-one).
    case column(String)
    /// Derived from the inverse's foreign-key column on the destination (to-many of a one-to-many).
    case inverseColumn(String)
    /// A join table (many-to-many); `sourceColumn` holds this side's key.
    case joinTable(table: String, sourceColumn: String, destinationColumn: String)
}

/// A relationship with everything the store needs resolved.
struct RelationshipInfo: Sendable {
    let relationship: Relationship
    let index: Int
    let destination: String
    let inverseName: String
    let storage: RelationshipStorage
    var isToMany: Bool { relationship.isToMany }
}

/// An entity with its table, columns and statements worked out once.
final class EntityInfo: Sendable {
    let entity: Entity
    let table: String
    let attributes: [Attribute]
    let attributeIndex: [String: Int]
    /// The attributes' names, types, whether required, and defaults, as flat arrays:
    /// the per-object paths read these without copying whole `Attribute`s.
    let attributeNames: [String]
    let attributeTypes: [AttributeType]
    let attributeRequired: [Bool]
    let attributeDefaults: [Value?]
    let hasDefaults: Bool
    /// Each name's two machine words (see `attributePosition`).
    let attributeNameBits: [(UInt64, UInt64)]
    let uniquenessConstraints: [[String]]
    /// Each uniqueness constraint as attribute positions.
    let uniquenessPositions: [[Int]]
    let relationships: [RelationshipInfo]
    let relationshipIndex: [String: Int]
    /// To-one relationships with a column, in column order after the attributes.
    let toOneColumns: [(relationship: Int, column: String)]
    let insertSQL: String
    let updateSQL: String
    let selectColumns: String
    /// `_pk`, the attributes and the to-one key columns, quoted, in row order.
    let selectColumnList: [String]
    /// The same, prefixed with the fetch's table alias `t0`.
    let aliasedSelectColumns: String
    let deleteSQL: String
    let selectByKeySQL: String
    /// One lookup per uniqueness constraint: the row holding these values, if any.
    let uniqueLookupSQL: [String]

    var name: String { entity.name }

    /// The attribute's position; runs for every value set, so it avoids hashing.
    ///
    /// Two strings with the same two machine words are the same string, and a short
    /// ASCII name (up to 15 bytes) is always stored inline, so for the names people
    /// use a comparison of two words finds the attribute. Anything else (a long name,
    /// a name built at run time) falls back to the dictionary.
    @inline(__always)
    func attributePosition(_ name: String) -> Int? {
        let bits = unsafeBitCast(name, to: (UInt64, UInt64).self)
        let found: Int? = attributeNameBits.withUnsafeBufferPointer { table in
            for index in table.indices where table[index].0 == bits.0 && table[index].1 == bits.1 { return index }
            return nil
        }
        return found ?? attributeIndex[name]
    }

    init(_ entity: Entity, model: Model) {
        self.entity = entity
        table = quoted(entity.name)
        attributes = entity.attributes
        attributeIndex = Dictionary(uniqueKeysWithValues: entity.attributes.enumerated().map { ($1.name, $0) })
        attributeNames = entity.attributes.map(\.name)
        attributeTypes = entity.attributes.map(\.type)
        attributeRequired = entity.attributes.map { !$0.isOptional }
        attributeDefaults = entity.attributes.map(\.defaultValue)
        hasDefaults = entity.attributes.contains { $0.defaultValue != nil }
        attributeNameBits = entity.attributes.map { unsafeBitCast($0.name, to: (UInt64, UInt64).self) }
        uniquenessConstraints = entity.uniquenessConstraints
        uniquenessPositions = entity.uniquenessConstraints.map { constraint in
            constraint.map { name in entity.attributes.firstIndex { $0.name == name }! }
        }
        var relationships: [RelationshipInfo] = []
        var toOne: [(Int, String)] = []
        for (index, relationship) in entity.relationships.enumerated() {
            let inverse = model.entity(relationship.destination)!.relationship(relationship.inverse)!
            let storage: RelationshipStorage
            switch (relationship.isToMany, inverse.isToMany) {
            case (false, _):
                storage = .column("_" + relationship.name)
                toOne.append((index, "_" + relationship.name))
            case (true, false):
                storage = .inverseColumn("_" + inverse.name)
            case (true, true):
                // One table per pair, named after the side that sorts first.
                let mine = "\(entity.name).\(relationship.name)"
                let theirs = "\(relationship.destination).\(inverse.name)"
                let table = "_join_" + min(mine, theirs)
                storage = mine <= theirs
                    ? .joinTable(table: table, sourceColumn: "_a", destinationColumn: "_b")
                    : .joinTable(table: table, sourceColumn: "_b", destinationColumn: "_a")
            }
            relationships.append(RelationshipInfo(relationship: relationship, index: index,
                                                  destination: relationship.destination,
                                                  inverseName: relationship.inverse, storage: storage))
        }
        self.relationships = relationships
        relationshipIndex = Dictionary(uniqueKeysWithValues: entity.relationships.enumerated().map { ($1.name, $0) })
        toOneColumns = toOne
        let columns = entity.attributes.map { quoted($0.name) } + toOne.map { quoted($0.1) }
        let allColumns = [quoted("_pk")] + columns
        insertSQL = "INSERT INTO \(table) (\(allColumns.joined(separator: ", "))) VALUES (\(allColumns.map { _ in "?" }.joined(separator: ", ")))"
        updateSQL = columns.isEmpty
            ? "SELECT 1"
            : "UPDATE \(table) SET \(columns.map { "\($0) = ?" }.joined(separator: ", ")) WHERE \"_pk\" = ?"
        selectColumns = allColumns.joined(separator: ", ")
        selectColumnList = allColumns
        aliasedSelectColumns = allColumns.map { "t0." + $0 }.joined(separator: ", ")
        deleteSQL = "DELETE FROM \(table) WHERE \"_pk\" = ?"
        selectByKeySQL = "SELECT \(allColumns.joined(separator: ", ")) FROM \(table) WHERE \"_pk\" = ?"
        uniqueLookupSQL = entity.uniquenessConstraints.map { constraint in
            "SELECT \"_pk\" FROM \(quoted(entity.name)) WHERE " + constraint.map { "\(quoted($0)) = ?" }.joined(separator: " AND ")
        }
    }

    /// The indexes that only speed up reads (attribute indexes, to-one columns): a bulk
    /// load may drop them and build them again at the end. Uniqueness indexes are not here.
    var secondaryIndexes: [(name: String, create: String)] {
        var indexes: [(name: String, create: String)] = []
        for attribute in attributes where attribute.isIndexed {
            let index = "_index_\(name)_\(attribute.name)"
            indexes.append((index, "CREATE INDEX IF NOT EXISTS \(quoted(index)) ON \(table) (\(quoted(attribute.name)))"))
        }
        for (_, column) in toOneColumns {
            let index = "_index_\(name)\(column)"
            indexes.append((index, "CREATE INDEX IF NOT EXISTS \(quoted(index)) ON \(table) (\(quoted(column)))"))
        }
        return indexes
    }

    /// Statements that create this entity's table and indexes, in SQLite's words or
    /// PostgreSQL's (there: only what is missing, so many processes may run them).
    func createStatements(_ dialect: SQLDialect = .sqlite) -> [String] {
        let postgres = dialect == .postgres
        let ifMissing = postgres ? "IF NOT EXISTS " : ""
        let integer = postgres ? "bigint" : "INTEGER"
        var columns = [quoted("_pk") + (postgres ? " bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY" : " INTEGER PRIMARY KEY")]
        columns += attributes.map { quoted($0.name) + " " + (postgres ? $0.type.postgresType : $0.type.sqlType) }
        columns += toOneColumns.map { quoted($0.column) + " " + integer }
        var statements = ["CREATE TABLE \(ifMissing)\(table) (\(columns.joined(separator: ", ")))"]
        for (i, constraint) in entity.uniquenessConstraints.enumerated() {
            statements.append("CREATE UNIQUE INDEX \(ifMissing)\(quoted("_unique_\(name)_\(i)")) ON \(table) (\(constraint.map(quoted).joined(separator: ", ")))")
        }
        statements += secondaryIndexes.map(\.create)
        for info in relationships {
            if case .joinTable(let joinTable, "_a", _) = info.storage {
                statements.append("CREATE TABLE \(ifMissing)\(quoted(joinTable)) (\"_a\" \(integer) NOT NULL, \"_b\" \(integer) NOT NULL, PRIMARY KEY (\"_a\", \"_b\"))"
                                  + (postgres ? "" : " WITHOUT ROWID"))
                statements.append("CREATE INDEX \(ifMissing)\(quoted(joinTable + "_b")) ON \(quoted(joinTable)) (\"_b\", \"_a\")")
            }
        }
        return statements
    }
}

/// Which SQL a statement is written in.
enum SQLDialect: Sendable {
    case sqlite, postgres
}

/// The whole model, resolved for the store.
struct Schema: Sendable {
    let model: Model
    let entities: [String: EntityInfo]
    let hasRelationships: Bool

    init(_ model: Model) {
        self.model = model
        entities = Dictionary(uniqueKeysWithValues: model.entities.map { ($0.name, EntityInfo($0, model: model)) })
        hasRelationships = model.entities.contains { !$0.relationships.isEmpty }
    }

    func entity(_ name: String) -> EntityInfo? { entities[name] }
}
