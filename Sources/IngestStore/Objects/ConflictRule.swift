/// What a write does when it names an object the store already holds (a row with the
/// same key): the update rule of imports and of `BatchInserter`.
public enum ConflictRule: String, Sendable, CaseIterable, Codable {
    /// The fields the record gives overwrite the stored ones; the fields it does not
    /// give keep their values. The default.
    case update
    /// The object becomes what the record says: fields it does not give go back to their
    /// defaults (or NULL).
    case replace
    /// The stored object stays as it is.
    case keepExisting
    /// A record that would change the stored object is rejected; one that repeats it
    /// exactly is counted unchanged.
    case reject
}

extension ConflictRule {
    /// Why the `reject` rule refuses a record: its object, then the first field whose stored
    /// value the record would change, with both values (`nil` for none), so that a user
    /// can see "7.800000" against "7.8" without opening the store.
    package static func rejectReason(entity: String, key: String, field: String, stored: Value?, given: Value?) -> String {
        "\(entity) \(key): \(field) stored \(stored?.description ?? "nil"), given \(given?.description ?? "nil") (its onConflict rule is reject)"
    }

    /// The same for a relationship: the record links (or leaves) other objects than the stored one.
    package static func rejectReason(entity: String, key: String, relationship: String) -> String {
        "\(entity) \(key): \(relationship) stored links other objects than the record gives (its onConflict rule is reject)"
    }
}

/// How a to-many relationship given by a record meets the stored one.
public enum ToManyRule: String, Sendable, CaseIterable, Codable {
    /// The relationship becomes exactly the objects the record lists. The default.
    case replace
    /// The objects the record lists are added to the stored ones.
    case merge
}
