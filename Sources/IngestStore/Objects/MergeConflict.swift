/// One object whose row changed in the store after its context read it: what a save
/// under the `.error` merge policy reports (Core Data's `NSMergeConflict`).
public struct MergeConflict: Sendable, Equatable, CustomStringConvertible {
    /// What happened to the row and to the object.
    public enum Kind: Sendable, Equatable {
        /// The context changed the object; the store changed the properties named.
        case changedInBoth
        /// The context deletes the object; the store changed the properties named.
        case deletedHere
        /// The context changed the object; its row was deleted from the store.
        case deletedInStore
    }

    /// One property the store changed.
    public struct Property: Sendable, Equatable {
        public let name: String
        /// As the context read it, as stored now, and as the context holds it (for a
        /// relationship: the related object's row, or nil).
        public let read: String
        public let stored: String
        public let here: String
        /// Whether the context changed it too.
        public let changedHere: Bool
    }

    public let objectID: ObjectID
    /// The object as messages name it ("Photo 17", "Photo row 4").
    public let label: String
    public let kind: Kind
    /// The properties the store changed, in the entity's order (empty when deleted in store).
    public let properties: [Property]

    public var description: String {
        let changes = properties.map { property in
            "\(property.name) (read \(property.read), stored \(property.stored)" + (property.changedHere ? ", here \(property.here))" : ")")
        }.joined(separator: ", ")
        return switch kind {
        case .changedInBoth: "\(label): the store changed \(changes)"
        case .deletedHere: "\(label) is deleted here, but the store changed \(changes)"
        case .deletedInStore: "\(label) was deleted from the store"
        }
    }
}
