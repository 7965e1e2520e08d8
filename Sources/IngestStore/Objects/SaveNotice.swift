/// What one successful save changed, as object IDs: safe to send to any queue.
public struct SaveNotice: Sendable, Equatable {
    public var inserted: Set<ObjectID>
    public var updated: Set<ObjectID>
    public var deleted: Set<ObjectID>
    /// Increases by one with every save to the store through this coordinator.
    public var sequence: Int
    /// The name of the context that saved.
    public var contextName: String
    let contextIdentity: ObjectIdentifier?
}
