public import Foundation
import GRDB
import Synchronization

/// Owns one SQLite store file (WAL mode): opens or creates it for a model, serializes
/// writes through one writer connection, serves reads from a pool of readers that
/// never wait for the writer, and tells observers about every save.
///
/// Contexts do their work through a coordinator; it is Sendable and shared by all.
public final class PersistentStoreCoordinator: Sendable {
    public let model: Model
    public let path: String
    /// The store's identity, part of every object ID's URI.
    public let storeID: UUID
    let schema: Schema
    let pool: DatabasePool
    private let saveSequence = Mutex(0)
    private let observers = Mutex<[UUID: @Sendable (SaveNotice) -> Void]>([:])
    /// Compiled fetch queries, by request (see `ObjectContext.selectQuery`).
    let queryCache = Mutex<[ObjectContext.QueryCacheKey: ObjectContext.SelectQuery]>([:])
    /// Related objects' keys → rows, shared by the coordinator's batch inserters.
    let keyCache = Mutex(KeyCache(limit: 250_000))
    /// Tests put a failure or a crash here, between a save's rows and its commit.
    let beforeCommit = Mutex<(@Sendable () throws -> Void)?>(nil)

    static let formatVersion = 1
    /// The writer connection's page cache (readers keep SQLite's 2 MiB).
    static let writerCacheKiB = 8 * 1024
    static let metadataTable = "_ingest_metadata"
    static let sequenceTable = "_ingest_sequence"

    /// Opens the store at `path`, creating it if there is no file there.
    ///
    /// A store made with another model is migrated in place when the new model only
    /// adds entities, optional attributes or relationships; otherwise opening fails.
    /// - Throws: `ModelError` for an invalid model; `StoreError.modelMismatch` naming
    ///   what differs; `StoreError.notAStore` for a file that is not an Ingest store.
    ///
    /// `readerCacheKiB` sets each reader connection's page cache (default: SQLite's
    /// 2 MiB); an importer whose readers only look keys up keeps its memory flat with less.
    public init(model: Model, path: String, readerCacheKiB: Int? = nil) throws {
        self.model = try model.validated()
        self.path = path
        schema = Schema(self.model)
        var configuration = Configuration()
        configuration.label = "ingest"
        configuration.busyMode = .timeout(30)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            if !db.configuration.readonly {
                // Index pages of a growing store are dirtied all over by every save; a
                // writer cache that holds them saves re-reading them each time.
                try db.execute(sql: "PRAGMA cache_size = -\(Self.writerCacheKiB)")
            } else if let readerCacheKiB {
                try db.execute(sql: "PRAGMA cache_size = -\(readerCacheKiB)")
            }
            PredicateFunctions.register(db)
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            storeID = try pool.write { [schema] db in try Self.prepare(db, schema: schema, path: path) }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_NOTADB {
            throw StoreError.notAStore(path: path, reason: "the file is not a SQLite database")
        } catch let error as DatabaseError {
            throw StoreError.database(error.message ?? "\(error)", code: error.extendedResultCode.rawValue)
        }
    }

    // MARK: - Access

    /// Runs `body` in one write transaction on the writer connection.
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try pool.write(body)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL {
            throw StoreError.diskFull(path: path, freeBytes: Self.freeBytes(near: path))
        } catch let error as DatabaseError {
            throw StoreError.database(error.message ?? "\(error)", code: error.extendedResultCode.rawValue)
        }
    }

    /// Free bytes on the file system holding `path`.
    static func freeBytes(near path: String) -> Int? {
        var info = statvfs()
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        guard statvfs(directory.isEmpty ? "/" : directory, &info) == 0 else { return nil }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    /// Tests make the next commits to a store fail as on a full disk (a fault-injection
    /// seam; nothing sets it outside tests): store path → commits left to fail.
    static let injectedCommitFailures = Mutex<[String: Int]>([:])

    /// Counts down an injected commit failure for this store; true when this commit fails.
    func takeInjectedCommitFailure() -> Bool {
        Self.injectedCommitFailures.withLock { failures in
            guard let left = failures[path], left > 0 else { return false }
            failures[path] = left - 1
            return true
        }
    }

    /// Runs `body` on a reader connection, against the last committed state.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try pool.read(body)
        } catch let error as DatabaseError {
            throw StoreError.database(error.message ?? "\(error)", code: error.extendedResultCode.rawValue)
        }
    }

    /// The JSON text stored under `key` in the store's metadata, or nil.
    /// - Throws: `StoreError.database` when the store cannot be read.
    public func metadata(forKey key: String) throws -> String? {
        try read { db in
            try String.fetchOne(db, sql: "SELECT value FROM \(quoted(Self.metadataTable)) WHERE key = ?", arguments: [key])
        }
    }

    /// The value stored under `key`, decoded from its JSON.
    /// - Throws: `StoreError.database`, or a decoding error when the JSON is not a `T`.
    public func metadata<T: Decodable>(forKey key: String, as type: T.Type) throws -> T? {
        guard let text = try metadata(forKey: key) else { return nil }
        return try JSONDecoder().decode(T.self, from: Data(text.utf8))
    }

    /// Rows of `entity` in the store, counted without loading them.
    /// - Throws: `StoreError.unknownEntity` or `StoreError.database`.
    public func count(_ entity: String) throws -> Int {
        guard let info = schema.entity(entity) else { throw StoreError.unknownEntity(entity) }
        return try read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM \(info.table)") ?? 0 }
    }

    // MARK: - Save notices

    /// Calls `callback` (on the saving context's queue) after every save.
    /// Keep the token; `removeSaveObserver` stops the calls.
    @discardableResult
    public func addSaveObserver(_ callback: @escaping @Sendable (SaveNotice) -> Void) -> UUID {
        let token = UUID()
        observers.withLock { $0[token] = callback }
        return token
    }

    public func removeSaveObserver(_ token: UUID) {
        _ = observers.withLock { $0.removeValue(forKey: token) }
    }

    /// Every save from now on, as an async sequence; it ends when the task reading it is cancelled.
    public func saveNotices() -> AsyncStream<SaveNotice> {
        let (stream, continuation) = AsyncStream<SaveNotice>.makeStream()
        let token = addSaveObserver { continuation.yield($0) }
        continuation.onTermination = { [weak self] _ in self?.removeSaveObserver(token) }
        return stream
    }

    var hasSaveObservers: Bool { observers.withLock { !$0.isEmpty } }

    func nextSaveSequence() -> Int { saveSequence.withLock { $0 += 1; return $0 } }

    /// The end of every save's transaction, on either path: the metadata staged with the
    /// rows, the tests' fault seams, and the save's sequence number.
    func finishSave(_ db: Database, metadata: [String: String]) throws -> Int {
        for (key, value) in metadata {
            try db.execute(sql: "INSERT OR REPLACE INTO \(quoted(Self.metadataTable)) (key, value) VALUES (?, ?)", arguments: [key, value])
        }
        try beforeCommit.withLock { $0 }?()
        if takeInjectedCommitFailure() {
            throw DatabaseError(resultCode: .SQLITE_FULL, message: "database or disk is full")
        }
        return nextSaveSequence()
    }

    func post(_ notice: SaveNotice) {
        for callback in observers.withLock({ Array($0.values) }) { callback(notice) }
    }

    // MARK: - Keys

    /// Reserves `count` row numbers for `entity` inside the current write transaction.
    func reserveKeys(_ count: Int, for entity: EntityInfo, _ db: Database) throws -> Int64 {
        let table = quoted(Self.sequenceTable)
        var next = try Int64.fetchOne(db, sql: "SELECT next FROM \(table) WHERE entity = ?", arguments: [entity.name])
        if next == nil {
            next = (try Int64.fetchOne(db, sql: "SELECT max(\"_pk\") FROM \(entity.table)") ?? 0) + 1
        }
        try db.execute(sql: "INSERT OR REPLACE INTO \(table) (entity, next) VALUES (?, ?)",
                       arguments: [entity.name, next! + Int64(count)])
        return next!
    }

    /// The row number each entity's next new object will get: rows numbered from these
    /// on were made after this call (imports tell a record that repeats one of their
    /// own from one that meets an older object).
    /// - Throws: `StoreError.database` when the store cannot be read.
    public func nextRowNumbers() throws -> [String: Int64] {
        try read { db in
            var next: [String: Int64] = [:]
            for entity in schema.entities.values {
                next[entity.name] = try Int64.fetchOne(db, sql: "SELECT next FROM \(quoted(Self.sequenceTable)) WHERE entity = ?", arguments: [entity.name])
                    ?? (try Int64.fetchOne(db, sql: "SELECT max(\"_pk\") FROM \(entity.table)") ?? 0) + 1
            }
            return next
        }
    }

    /// Renames metadata entries in one transaction: `rename` gives a key's new name, or
    /// nil to keep it. (Stores written by an earlier version keep their entries under
    /// older names.)
    /// - Throws: `StoreError.database` when the store cannot be written.
    public func renameMetadata(withPrefix prefix: String, _ rename: (String) -> String?) throws {
        let keys = try metadata(withPrefix: prefix).keys
        try write { db in
            for key in keys {
                guard let newKey = rename(key) else { continue }
                try db.execute(sql: "UPDATE \(quoted(Self.metadataTable)) SET key = ? WHERE key = ?", arguments: [newKey, key])
            }
        }
    }

    /// Reserves permanent row numbers in a transaction of its own.
    func reserveKeys(_ count: Int, for entity: EntityInfo) throws -> Int64 {
        try write { db in try reserveKeys(count, for: entity, db) }
    }
}

extension PersistentStoreCoordinator {
    /// Every metadata entry whose key starts with `prefix`, as JSON text by key.
    /// - Throws: `StoreError.database` when the store cannot be read.
    public func metadata(withPrefix prefix: String) throws -> [String: String] {
        try read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT key, value FROM \(quoted(Self.metadataTable)) WHERE substr(key, 1, ?) = ?",
                                        arguments: [prefix.count, prefix])
            var result: [String: String] = [:]
            for row in rows { result[row["key"]] = row["value"] }
            return result
        }
    }
}
