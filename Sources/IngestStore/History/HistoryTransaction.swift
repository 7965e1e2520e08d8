public import Foundation

/// One save as the store's history recorded it, in the save's own transaction: who saved,
/// when, and what changed (Core Data's `NSPersistentHistoryTransaction`).
public struct HistoryTransaction: Sendable, Equatable {
    /// Its place in the history (see `HistoryToken.position`).
    public var position: Int64
    public var timestamp: Date
    /// The saving context's `transactionAuthor` (its name unless set), or for imports
    /// `import run N chunk M`.
    public var author: String
    /// The process that saved: `host:pid`.
    public var process: String
    public var changes: [HistoryChange]
    /// The token to continue from once this transaction is handled: a consumer that keeps
    /// it after each transaction resumes exactly after it.
    public var token: HistoryToken
}

/// One object's change in a history transaction.
public struct HistoryChange: Sendable, Equatable {
    public enum Kind: String, Sendable, Codable {
        case insert, update, delete
    }

    public var kind: Kind
    public var objectID: ObjectID
    /// The object's entity. (Its ID names its hierarchy's root, as every ID does; see
    /// `ObjectID`.) A row a save changed only as the other side of a link, which the saving
    /// context had not loaded, is named by the relationship's destination entity.
    public var entity: String
    /// For an update, the attributes and relationships it changed. A context's save names
    /// exactly those; the batch path names those the record gave, of which the store
    /// changed at least one (an update that changes nothing is not recorded).
    public var updatedProperties: [String]
    /// For a delete, the object's uniqueness key values (empty for an entity without one).
    public var tombstone: [String: Value]

    public init(kind: Kind, objectID: ObjectID, entity: String? = nil, updatedProperties: [String] = [], tombstone: [String: Value] = [:]) {
        self.kind = kind
        self.objectID = objectID
        self.entity = entity ?? objectID.entityName
        self.updatedProperties = updatedProperties
        self.tombstone = tombstone
    }
}

/// What `PersistentStoreCoordinator.fetchHistory(after:)` found: transactions in history
/// order, and the token to fetch after next time.
public struct HistoryFetch: Sendable, Equatable {
    public var transactions: [HistoryTransaction]
    /// Fetch after this next: it is past every transaction returned and never past one
    /// not yet committed.
    public var token: HistoryToken
    /// The changes of all the transactions, in order.
    public var changes: [HistoryChange] { transactions.flatMap(\.changes) }
}
