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
    /// The destination's hierarchy root: what the related objects' IDs name.
    let destinationRoot: String
    let inverseName: String
    let storage: RelationshipStorage
    /// For an ordered to-many: the column holding each member's position, on the
    /// destination's table (beside its key column) or on the join table (this side's).
    let orderColumn: String?
    var isToMany: Bool { relationship.isToMany }
}

/// Where a subentity's row sits in a fetch of an ancestor: the columns (counted from
/// `_pk`, 0) of its attributes and its to-one keys.
struct SubentityLayout: Sendable {
    let name: String
    let attributeColumns: [Int]
    let toOneColumns: [Int]
}

/// An entity with its table, columns and statements worked out once.
///
/// Entity inheritance keeps one table per hierarchy, named after its root entity, with a
/// column `_entity` holding each row's entity (`Model.entityCode`, from its name) and the
/// columns of every entity in the hierarchy. An entity outside any hierarchy has its own
/// table without `_entity`, as before inheritance existed.
final class EntityInfo: Sendable {
    let entity: Entity
    /// The quoted table: the hierarchy root's.
    let table: String
    /// The hierarchy's root entity (this one when it has no parent).
    let rootName: String
    /// This entity's number in `_entity` (`Model.entityCode`); nil outside a hierarchy.
    let code: Int64?
    /// The numbers of this entity and every entity below it.
    let subtreeCodes: [Int64]
    /// Subentities (not this one) by number, for fetches that meet their rows.
    let subentityLayouts: [Int64: SubentityLayout]
    /// The select list's column holding `_entity`, when subentities' rows can come back.
    let entityColumn: Int?
    /// Whether the table holds rows of other entities than this one and its subentities:
    /// queries then filter on `_entity`.
    let needsEntityFilter: Bool
    /// The hierarchy's other entities' own statements (indexes), made with the root's table.
    private let hierarchyMembers: [Entity]
    /// Relationships of this entity and its hierarchy whose inverse is an ordered to-many.
    private let orderedInverses: Set<String>
    let attributes: [Attribute]
    let attributeIndex: [String: Int]
    /// The attributes' names, types, whether required, and defaults, as flat arrays:
    /// the per-object paths read these without copying whole `Attribute`s.
    let attributeNames: [String]
    let attributeTypes: [AttributeType]
    let attributeRequired: [Bool]
    let attributeDefaults: [Value?]
    let hasDefaults: Bool
    /// The lineage attributes' positions (run, chunk, record: `Model.lineageAttributeNames`),
    /// or empty: an import sets them and does not count them as a change.
    let lineagePositions: [Int]
    /// Each name's two machine words (see `attributePosition`).
    let attributeNameBits: [(UInt64, UInt64)]
    /// Each stored attribute's value rules, ready to check; nil where it has none.
    let attributeChecks: [AttributeCheck?]
    let hasChecks: Bool
    /// The transient attributes (not in `attributes`: they have no column), their
    /// positions among themselves, and their defaults.
    let transientAttributes: [Attribute]
    let transientIndex: [String: Int]
    let transientDefaults: [Value?]
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

    /// Whether the attribute at `position` is a lineage attribute (see `lineagePositions`).
    @inline(__always)
    func isLineage(_ position: Int) -> Bool { !lineagePositions.isEmpty && lineagePositions.contains(position) }

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

    /// `declared` as the model declares it (transient attributes, rules); its table and
    /// columns come from `model`'s stored form.
    @_optimize(none)
    init(_ declared: Entity, model: Model) {
        let model = model.storedForm
        let entity = model.entity(declared.name) ?? declared
        self.entity = entity
        transientAttributes = declared.attributes.filter(\.isTransient)
        transientIndex = Dictionary(uniqueKeysWithValues: transientAttributes.enumerated().map { ($1.name, $0) })
        transientDefaults = transientAttributes.map { $0.defaultValue?.canonicalized }
        attributeChecks = declared.storedAttributes.map { AttributeCheck($0.rules) }
        hasChecks = attributeChecks.contains { $0 != nil }
        let rootName = model.rootEntity(of: entity.name)
        self.rootName = rootName
        let table = quoted(rootName)
        self.table = table
        let hierarchy = model.subentities(of: rootName)
        let inHierarchy = hierarchy.count > 1
        func number(_ name: String) -> Int64 { Model.entityCode(name) }
        let code = inHierarchy ? number(entity.name) : nil
        self.code = code
        let subtree = model.subentities(of: entity.name)
        subtreeCodes = inHierarchy ? subtree.map(number) : []
        needsEntityFilter = inHierarchy && entity.name != rootName
        hierarchyMembers = inHierarchy && entity.name == rootName ? hierarchy.dropFirst().map { model.entity($0)! } : []
        orderedInverses = Set(([entity] + hierarchyMembers).flatMap(\.relationships).filter { relationship in
            model.entity(relationship.destination)?.relationship(relationship.inverse)?.isOrdered == true
        }.map(\.name))
        attributes = entity.attributes
        attributeIndex = Dictionary(uniqueKeysWithValues: entity.attributes.enumerated().map { ($1.name, $0) })
        attributeNames = entity.attributes.map(\.name)
        attributeTypes = entity.attributes.map(\.type)
        attributeRequired = entity.attributes.map { !$0.isOptional }
        attributeDefaults = entity.attributes.map { $0.defaultValue?.canonicalized }
        hasDefaults = entity.attributes.contains { $0.defaultValue != nil }
        let lineage = Model.lineageAttributeNames.compactMap { name in entity.attributes.firstIndex { $0.name == name && Model.isLineage($0) } }
        lineagePositions = lineage.count == Model.lineageAttributeNames.count ? lineage : []
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
                // An inherited relationship shares the table of the ancestor that declares it.
                let mine = "\(model.declaring(relationship.name, in: entity)).\(relationship.name)"
                let theirs = "\(relationship.destination).\(inverse.name)"
                let table = "_join_" + min(mine, theirs)
                storage = mine <= theirs
                    ? .joinTable(table: table, sourceColumn: "_a", destinationColumn: "_b")
                    : .joinTable(table: table, sourceColumn: "_b", destinationColumn: "_a")
            }
            var orderColumn: String?
            if relationship.isOrdered {
                switch storage {
                case .inverseColumn(let column): orderColumn = column + "_order"
                case .joinTable(_, let source, _): orderColumn = source + "_order"
                case .column: break
                }
            }
            relationships.append(RelationshipInfo(relationship: relationship, index: index,
                                                  destination: relationship.destination,
                                                  destinationRoot: model.rootEntity(of: relationship.destination),
                                                  inverseName: relationship.inverse, storage: storage, orderColumn: orderColumn))
        }
        self.relationships = relationships
        relationshipIndex = Dictionary(uniqueKeysWithValues: entity.relationships.enumerated().map { ($1.name, $0) })
        toOneColumns = toOne
        let columns = entity.attributes.map { quoted($0.name) } + toOne.map { quoted($0.1) }
        var allColumns = [quoted("_pk")] + columns
        // The entity's number is part of the statement, not a bound value: binding stays as it was.
        insertSQL = code.map { code in
            "INSERT INTO \(table) (\(([quoted("_pk"), quoted("_entity")] + columns).joined(separator: ", "))) VALUES (?, \(code)\(columns.map { _ in ", ?" }.joined()))"
        } ?? "INSERT INTO \(table) (\(allColumns.joined(separator: ", "))) VALUES (\(allColumns.map { _ in "?" }.joined(separator: ", ")))"
        // A fetch of an entity with subentities reads `_entity` and their own columns after its row.
        var layouts: [Int64: SubentityLayout] = [:]
        if subtree.count > 1 {
            entityColumn = allColumns.count
            allColumns.append(quoted("_entity"))
            var position: [String: Int] = Dictionary(uniqueKeysWithValues: allColumns.enumerated().map { ($1, $0) })
            for name in subtree.dropFirst() {
                let sub = model.entity(name)!
                var attributeColumns: [Int] = []
                for attribute in sub.attributes {
                    let column = quoted(attribute.name)
                    if position[column] == nil { position[column] = allColumns.count; allColumns.append(column) }
                    attributeColumns.append(position[column]!)
                }
                var toOneColumns: [Int] = []
                for relationship in sub.relationships where !relationship.isToMany {
                    let column = quoted("_" + relationship.name)
                    if position[column] == nil { position[column] = allColumns.count; allColumns.append(column) }
                    toOneColumns.append(position[column]!)
                }
                layouts[number(name)] = SubentityLayout(name: name, attributeColumns: attributeColumns, toOneColumns: toOneColumns)
            }
        } else {
            entityColumn = nil
        }
        subentityLayouts = layouts
        updateSQL = columns.isEmpty
            ? "SELECT 1"
            : "UPDATE \(table) SET \(columns.map { "\($0) = ?" }.joined(separator: ", ")) WHERE \"_pk\" = ?"
        selectColumns = allColumns.joined(separator: ", ")
        selectColumnList = allColumns
        aliasedSelectColumns = allColumns.map { "t0." + $0 }.joined(separator: ", ")
        deleteSQL = "DELETE FROM \(table) WHERE \"_pk\" = ?"
        selectByKeySQL = "SELECT \(allColumns.joined(separator: ", ")) FROM \(table) WHERE \"_pk\" = ?"
        uniqueLookupSQL = entity.uniquenessConstraints.map { constraint in
            "SELECT \"_pk\" FROM \(quoted(rootName)) WHERE " + constraint.map { "\(quoted($0)) = ?" }.joined(separator: " AND ")
        }
    }

    /// The condition that keeps this entity's rows and its subentities' (`alias."_entity" IN (…)`),
    /// or nil when every row of the table is one.
    func entityCondition(alias: String? = nil, includingSubentities: Bool = true) -> String? {
        let column = (alias.map { $0 + "." } ?? "") + quoted("_entity")
        if !includingSubentities, let code, subtreeCodes.count > 1 { return "\(column) = \(code)" }
        guard needsEntityFilter else { return nil }
        return subtreeCodes.count == 1 ? "\(column) = \(subtreeCodes[0])" : "\(column) IN (\(subtreeCodes.map(String.init).joined(separator: ", ")))"
    }

    /// Whether an object of `other` is one of this entity's (itself or a subentity).
    func includes(_ other: EntityInfo) -> Bool {
        other === self || (code != nil && other.code.map(subtreeCodes.contains) == true)
    }

    /// The indexes that only speed up reads (attribute indexes, to-one columns): a bulk
    /// load may drop them and build them again at the end. Uniqueness indexes are not here.
    var secondaryIndexes: [(name: String, create: String)] { secondaryIndexes(.sqlite) }

    /// `secondaryIndexes` in `dialect`'s words.
    func secondaryIndexes(_ dialect: SQLDialect) -> [(name: String, create: String)] {
        guard !needsEntityFilter else { return [] }   // the root's list holds a subentity's
        var indexes = Self.declaredIndexes(entity, table: table, dialect)
        for member in hierarchyMembers { indexes += Self.declaredIndexes(member, table: table, dialect) }
        if code != nil {
            let index = "_index_\(name)__entity"
            indexes.append((index, "CREATE INDEX IF NOT EXISTS \(quoted(index)) ON \(table) (\"_entity\")"))
        }
        return indexes
    }

    /// Indexes of the attributes and to-ones `entity` declares, on `table`.
    @_optimize(none)
    private static func declaredIndexes(_ entity: Entity, table: String, _ dialect: SQLDialect) -> [(name: String, create: String)] {
        var indexes: [(name: String, create: String)] = []
        for attribute in entity.declaredAttributes where attribute.isIndexed {
            let index = "_index_\(entity.name)_\(attribute.name)"
            indexes.append((index, "CREATE INDEX IF NOT EXISTS \(quoted(index)) ON \(table) (\(indexedColumn(attribute, dialect)))"))
        }
        for relationship in entity.declaredRelationships where !relationship.isToMany {
            let index = "_index_\(entity.name)_\(relationship.name)"
            indexes.append((index, "CREATE INDEX IF NOT EXISTS \(quoted(index)) ON \(table) (\(quoted("_" + relationship.name)))"))
        }
        return indexes
    }

    /// The column that marks a placeholder: a row made only because a record named its key
    /// (a reference) before any record described it. Non-NULL until the first record that
    /// describes the object fills it, whatever the entity's update rule; contexts and
    /// fetches never see it.
    static let placeholderColumn = "\"_placeholder\""

    static func placeholderColumnDefinition(_ dialect: SQLDialect) -> String {
        placeholderColumn + (dialect == .postgres ? " smallint" : " INTEGER")
    }

    /// Adds the placeholder column to a table made before it existed; nil for an entity whose
    /// rows live in its hierarchy root's table.
    func addPlaceholderColumnSQL(_ dialect: SQLDialect) -> String? {
        needsEntityFilter ? nil : "ALTER TABLE \(table) ADD COLUMN \(Self.placeholderColumnDefinition(dialect))"
    }

    /// An attribute as an index orders it: decimals by number on SQLite, where they are
    /// text (`PredicateCompiler.byNumber` compares them so, and only then is the index used).
    static func indexedColumn(_ attribute: Attribute, _ dialect: SQLDialect) -> String {
        guard attribute.type == .decimal && dialect == .sqlite else { return quoted(attribute.name) }
        return quoted(attribute.name) + " COLLATE " + PredicateFunctions.decimalCollation
    }

    /// Statements that create this entity's table and indexes, in SQLite's words or
    /// PostgreSQL's (there: only what is missing, so many processes may run them). A
    /// hierarchy's root makes the table for all its entities; the others make only their
    /// join tables.
    @_optimize(none)
    func createStatements(_ dialect: SQLDialect = .sqlite) -> [String] {
        let postgres = dialect == .postgres
        let ifMissing = postgres ? "IF NOT EXISTS " : ""
        let integer = postgres ? "bigint" : "INTEGER"
        var statements: [String] = []
        if !needsEntityFilter {
            var columns = [quoted("_pk") + (postgres ? " bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY" : " INTEGER PRIMARY KEY")]
            if code != nil { columns.append(quoted("_entity") + " " + integer + " NOT NULL") }
            for member in [entity] + hierarchyMembers {
                columns += member.declaredAttributes.map { quoted($0.name) + " " + (postgres ? $0.type.postgresType : $0.type.sqlType) }
                for relationship in member.declaredRelationships where !relationship.isToMany {
                    columns.append(quoted("_" + relationship.name) + " " + integer)
                    // The position among the inverse's members, when that to-many is ordered.
                    if orderedInverses.contains(relationship.name) { columns.append(quoted("_" + relationship.name + "_order") + " " + integer) }
                }
            }
            columns.append(Self.placeholderColumnDefinition(dialect))
            statements.append("CREATE TABLE \(ifMissing)\(table) (\(columns.joined(separator: ", ")))")
            for member in [entity] + hierarchyMembers {
                let first = member.inheritedCounts.uniquenessConstraints
                for (i, constraint) in member.declaredUniquenessConstraints.enumerated() {
                    statements.append("CREATE UNIQUE INDEX \(ifMissing)\(quoted("_unique_\(member.name)_\(first + i)")) ON \(table) (\(constraint.map(quoted).joined(separator: ", ")))")
                }
            }
            statements += secondaryIndexes(dialect).map(\.create)
        }
        for info in relationships[entity.inheritedCounts.relationships...] {
            if case .joinTable(let joinTable, "_a", _) = info.storage {
                // Each ordered side keeps its members' positions.
                let orders = (info.relationship.isOrdered ? ", \"_a_order\" \(integer)" : "")
                    + (orderedInverses.contains(info.relationship.name) ? ", \"_b_order\" \(integer)" : "")
                statements.append("CREATE TABLE \(ifMissing)\(quoted(joinTable)) (\"_a\" \(integer) NOT NULL, \"_b\" \(integer) NOT NULL\(orders), PRIMARY KEY (\"_a\", \"_b\"))"
                                  + (postgres ? "" : " WITHOUT ROWID"))
                statements.append("CREATE INDEX \(ifMissing)\(quoted(joinTable + "_b")) ON \(quoted(joinTable)) (\"_b\", \"_a\")")
            }
        }
        return statements
    }
}

/// The whole model, resolved for the store.
struct Schema: Sendable {
    let model: Model
    let entities: [String: EntityInfo]
    let hasRelationships: Bool
    /// Whether any to-many keeps an order (saves then write positions).
    let hasOrderedRelationships: Bool

    /// The schema of `model` as the store keeps it (`Model.storedForm`, which `model`
    /// holds); each entity's info keeps its transient attributes and rules.
    init(_ declared: Model) {
        let model = declared.storedForm
        self.model = model
        entities = Dictionary(uniqueKeysWithValues: declared.entities.map { ($0.name, EntityInfo($0, model: model)) })
        hasRelationships = model.entities.contains { !$0.relationships.isEmpty }
        hasOrderedRelationships = model.entities.contains { $0.relationships.contains(where: \.isOrdered) }
    }

    func entity(_ name: String) -> EntityInfo? { entities[name] }
}

extension Model {
    /// The quoted table holding `entity`'s rows: its hierarchy root's (see `EntityInfo`).
    package func storageTable(of entity: String) -> String { quoted(rootEntity(of: entity)) }

    /// The condition (on `_entity`) that keeps `entity`'s rows and its subentities' in its
    /// table, or nil when every row of the table is one.
    package func rowCondition(of entity: String) -> String? {
        EntityInfo(self.entity(entity)!, model: self).entityCondition()
    }
}
