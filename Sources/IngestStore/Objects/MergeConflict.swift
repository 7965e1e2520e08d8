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
        /// A child context changed the object; its parent changed the properties named
        /// since the child read it.
        case changedInParent
        /// A child context deletes the object; its parent changed the properties named.
        case deletedInChild
        /// A child context changed the object; its parent deleted it.
        case deletedInParent
    }

    /// One property the store (for a child's save, the parent context) changed.
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

    /// Whether the conflict is between a child context and its parent, not with the store.
    public var isWithParent: Bool { kind == .changedInParent || kind == .deletedInChild || kind == .deletedInParent }

    public var description: String {
        let now = isWithParent ? "in the parent" : "stored"
        let changes = properties.map { property in
            "\(property.name) (read \(property.read), \(now) \(property.stored)" + (property.changedHere ? ", here \(property.here))" : ")")
        }.joined(separator: ", ")
        return switch kind {
        case .changedInBoth: "\(label): the store changed \(changes)"
        case .deletedHere: "\(label) is deleted here, but the store changed \(changes)"
        case .deletedInStore: "\(label) was deleted from the store"
        case .changedInParent: "\(label): the parent context changed \(changes)"
        case .deletedInChild: "\(label) is deleted in the child context, but the parent context changed \(changes)"
        case .deletedInParent: "\(label) was deleted in the parent context"
        }
    }
}
