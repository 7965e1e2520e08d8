public import Foundation

/// Why the store refused an operation. Messages name the store, entity, object or key.
///
/// A backend's failure (a constraint, a full disk, a lock held elsewhere, a lost
/// connection…) is matched the same way on SQLite and PostgreSQL through `reason`, without
/// result codes or SQLSTATEs: `catch let error as StoreError where error.reason == .constraint(.unique)`.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    /// The file is not SQLite, or SQLite without Ingest's tables.
    case notAStore(path: String, reason: String)
    /// The store was made with another model and cannot be migrated in place.
    case modelMismatch(path: String, differences: [String])
    /// Required attributes without a value, values of the wrong type or out of range, or a
    /// deny rule: each problem names its object, property and rule.
    case validation([ValidationProblem])
    /// Uniqueness conflicts under the `.error` merge policy; nothing was written.
    case uniquenessConflict([String])
    /// Objects this save changes whose rows changed in the store since the context read
    /// them, under the `.error` merge policy (or, under any policy, rows deleted from the
    /// store that the policy cannot give up); nothing was written.
    case mergeConflict([MergeConflict])
    /// An object ID that names no row (deleted, or never saved).
    case objectNotFound(ObjectID)
    case unknownEntity(String)
    case unknownProperty(entity: String, property: String)
    /// A SQLite failure: SQLite's message and its extended result code
    /// (`.SQLITE_CONSTRAINT_UNIQUE`, say). Match `reason` instead to handle
    /// both backends alike (`.constraint(.unique)`).
    case database(String, code: SQLiteResultCode? = nil)
    /// The disk holding the store is full; nothing of the failed save was written.
    case diskFull(path: String, freeBytes: Int?)
    /// A PostgreSQL store's failure: the server unreachable, or a statement it refused (with
    /// its SQLSTATE and statement). Match `reason` to handle both backends alike.
    case postgres(PostgresError)
    /// A history token from before the store's last purge: the changes between it and the
    /// purge are gone, so the consumer must fetch the store afresh.
    case historyPurged(token: String, purgedBefore: String)
    /// The history cannot answer: a token of another store, or a store without history tables.
    case history(String)

    /// The first few problems of a long list, and how many more there are.
    private static func list(_ problems: [String], shown limit: Int = 3) -> String {
        let shown = problems.prefix(limit).joined(separator: "; ")
        return problems.count > limit ? shown + "; and \(problems.count - limit) more" : shown
    }

    public var description: String {
        switch self {
        case .notAStore(let path, let reason): "\(path) is not an Ingest store: \(reason)"
        case .modelMismatch(let path, let differences):
            "the store at \(path) was made with a different model: " + Self.list(differences, shown: 5)
        case .validation(let problems): "the save failed validation: " + Self.list(problems.map(\.description))
        case .uniquenessConflict(let conflicts): "the save conflicts with uniqueness constraints: " + Self.list(conflicts)
        case .mergeConflict(let conflicts):
            "the save conflicts with changes made in \(conflicts.allSatisfy(\.isWithParent) ? "the parent context" : "the store") since the objects were read: "
                + Self.list(conflicts.map(\.description))
        case .objectNotFound(let id): "no object with ID \(id) in the store"
        case .unknownEntity(let name): "the model has no entity '\(name)'"
        case .unknownProperty(let entity, let property): "entity \(entity) has no property '\(property)'"
        case .database(let message, let code): "SQLite: \(message)" + (code.map { " (result code \($0.rawValue))" } ?? "")
        case .diskFull(let path, let free):
            "cannot write \(path): the disk is full" + (free.map { " (\($0 / 1024) KiB free on that file system)" } ?? "")
        case .postgres(let error): error.description
        case .historyPurged(let token, let purgedBefore):
            "history token \(token) is from before the history was purged (it keeps positions from \(purgedBefore) on): the changes after it are gone; fetch the objects afresh and continue from the current token (coordinator.currentHistoryToken(), or the last line of ingest history)"
        case .history(let reason): "the store's history: \(reason)"
        }
    }
}

extension StoreError {
    public var errorDescription: String? { description }

    /// A constraint of the store's tables refused a row (UNIQUE, NOT NULL, CHECK, a foreign
    /// key, a SQLite trigger's RAISE…), on either backend.
    public var isConstraintFailure: Bool {
        if case .constraint = reason { true } else { false }
    }

    /// SQLite's error for the store at `path`, as the store reports it: the one place
    /// SQLite's failures are named. Not a database → `notAStore`; the disk full →
    /// `diskFull`; any other → `database`, with the extended result code.
    static func sqlite(_ error: SQLiteError, path: String) -> StoreError {
        switch error.resultCode {
        case .SQLITE_NOTADB: .notAStore(path: path, reason: "the file is not a SQLite database")
        case .SQLITE_FULL: .diskFull(path: path, freeBytes: PersistentStoreCoordinator.freeBytes(near: path))
        default: .database(error.message, code: error.extendedResultCode)
        }
    }
}
