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

/// How a to-many relationship given by a record meets the stored one.
public enum ToManyRule: String, Sendable, CaseIterable, Codable {
    /// The relationship becomes exactly the objects the record lists. The default.
    case replace
    /// The objects the record lists are added to the stored ones.
    case merge
}
