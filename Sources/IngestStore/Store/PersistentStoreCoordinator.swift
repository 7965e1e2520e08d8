public import Foundation
import Synchronization

/// Owns one store for a model: a SQLite file (WAL mode) or a PostgreSQL database.
/// On SQLite it serializes writes through one writer connection and serves reads from a
/// pool of readers that never wait for the writer; on PostgreSQL, writes take the store's
/// write lock (an advisory lock), so saves see each other as they do on SQLite. It tells
/// observers about every save.
///
/// Contexts do their work through a coordinator; it is Sendable and shared by all.
public final class PersistentStoreCoordinator: Sendable {
    public let model: Model
    /// The store's file, or its PostgreSQL URL without the password.
    public let path: String
    /// The store's identity, part of every object ID's URI.
    public let storeID: UUID
    /// Opened for reading only: every write fails.
    public let isReadOnly: Bool
    let schema: Schema
    /// The database holding the store; every read and write of the object graph goes through it.
    let store: any PersistentStore
    private let saveSequence = Mutex(0)
    let historyEnabled = Atomic(true)
    private let observers = ObserverRegistry<SaveNotice>()
    /// Compiled fetch queries, by request (see `ObjectContext.selectQuery`).
    let queryCache = Mutex<[ObjectContext.QueryCacheKey: ObjectContext.SelectQuery]>([:])
    /// Related objects' keys → rows, shared by the coordinator's batch inserters.
    let keyCache = Mutex(KeyCache(limit: 250_000))
    /// Each entity's lifecycle hooks and validation (`setLifecycle(_:forEntity:)`).
    let lifecycles = LifecycleRegistry()
    /// Tests put a failure or a crash here, between a save's rows and its commit.
    let beforeCommit = Mutex<(@Sendable () throws -> Void)?>(nil)
    /// What goes with the coordinator (`whenGone`), by key.
    private let farewells = Mutex<[String: @Sendable () -> Void]>([:])

    deinit {
        for farewell in farewells.withLock({ Array($0.values) }) { farewell() }
    }

    /// Runs `body` when the coordinator goes (once for each `key`, the last given): for
    /// what belongs to a store in memory outside it, such as an import's run files, which
    /// would otherwise outlive the store they describe.
    package func whenGone(_ key: String, _ body: @escaping @Sendable () -> Void) {
        farewells.withLock { $0[key] = body }
    }

    /// Held in memory only (Core Data's `NSInMemoryStoreType`): gone with the coordinator.
    public var isInMemory: Bool { (store as? SQLitePersistentStore)?.isInMemory ?? false }
    /// The start of an in-memory store's `path`, which ends with its store ID.
    static let inMemoryPrefix = "memory:"

    /// The newest store format this version reads and writes. 2: decimals are canonical
    /// text (`DecimalText`), their indexes ordered by number. A store without decimal
    /// attributes is the same in both and stays 1, so earlier versions still open it.
    static let formatVersion = 2
    /// The writer connection's page cache (readers keep SQLite's 2 MiB).
    static let writerCacheKiB = 8 * 1024
    static let metadataTable = "_ingest_metadata"
    /// The table of the store's metadata, for messages about it.
    public static var metadataTableName: String { metadataTable }
    static let sequenceTable = "_ingest_sequence"

    /// Opens the store `url` names, creating it when there is none: a `file:` URL is a
    /// SQLite file (as `init(model:path:)`), a `postgresql:` URL a PostgreSQL database
    /// (libpq's URL; `PG*` variables and `~/.pgpass` apply), `memory:` a new store held in
    /// memory (as `init(inMemory:)`).
    /// - Throws: as `init(model:path:)`; for PostgreSQL also `StoreError.postgres` when the
    ///   server cannot be reached, and `.modelMismatch` when the database holds another model.
    public convenience init(model: Model, url: URL) throws {
        switch url.scheme?.lowercased() {
        case "file"?, nil:
            try self.init(model: model, path: url.path)
        case "memory"?:
            try self.init(inMemory: model)
        case "postgresql"?, "postgres"?:
            let address: PostgresURL
            do { address = try PostgresURL(url.absoluteString) } catch { throw StoreError.postgres(error) }
            try self.init(model: model, postgres: address)
        case let scheme?:
            throw StoreError.notAStore(path: url.absoluteString,
                                       reason: "a store URL is file: (SQLite), postgresql: (PostgreSQL) or memory:, not \(scheme):")
        }
    }

    /// Opens the store in the PostgreSQL database at `url`, making its tables when the
    /// database has none (see `PostgresStore`).
    /// - Throws: `ModelError` for an invalid model; `StoreError.postgres` when the server
    ///   cannot be reached or refuses a statement; `StoreError.modelMismatch` when the
    ///   database holds another model.
    ///
    /// `readOnly` only reads: the database must already hold the model's tables, and
    /// SELECT rights suffice.
    public convenience init(model: Model, postgres url: PostgresURL, readOnly: Bool = false) throws {
        let store: PostgresStore
        do {
            store = try PostgresStore(url: url, model: try model.validated(), readOnly: readOnly)
        } catch let error as PostgresError {
            if case .modelMismatch(let target, let reason) = error { throw StoreError.modelMismatch(path: target, differences: [reason]) }
            throw StoreError.postgres(error)
        }
        try self.init(opened: store, readOnly: readOnly)
    }

    /// A coordinator on a PostgreSQL store already opened (an importer's, whose workers
    /// need contexts on it).
    /// - Throws: `StoreError.postgres` when the server cannot be reached.
    package init(opened store: PostgresStore, readOnly: Bool = false) throws {
        model = store.model
        path = store.url.description
        schema = store.schema
        let url = store.url
        let pool = PostgresPool(url: url)
        let id = UUID().uuidString
        let stored = try pool.with { connection in
            // Read first: a reader with SELECT rights only opens a store that has its ID.
            let select = "SELECT value FROM _ingest_store WHERE key = 'store.id'"
            let found = try PostgresSQL.run(select, [], on: connection)
            // A reader does not record one: its object IDs last as long as it does.
            if found.count == 1 || readOnly { return found.count == 1 ? found[0, 0] : id }
            try PostgresSQL.run("INSERT INTO _ingest_store VALUES ('store.id', ?) ON CONFLICT DO NOTHING", [.string(id)], on: connection)
            return try PostgresSQL.run(select, [], on: connection)[0, 0]
        }
        storeID = stored.flatMap(UUID.init(uuidString:)) ?? UUID()
        self.store = PostgresPersistentStore(pool: pool)
        isReadOnly = readOnly
    }

    /// Opens the store at `path`, creating it if there is no file there.
    ///
    /// A store made with another model is migrated in place when the new model only
    /// adds entities, optional attributes or relationships; otherwise opening fails.
    /// - Throws: `ModelError` for an invalid model; `StoreError.modelMismatch` naming
    ///   what differs; `StoreError.notAStore` for a file that is not an Ingest store.
    ///
    /// `readerCacheKiB` sets each reader connection's page cache (default: SQLite's
    /// 2 MiB); an importer whose readers only look keys up keeps its memory flat with less.
    ///
    /// `readOnly` opens an existing store for reading only (`ingest query`, `status`): it
    /// never takes the write lock, so it never waits for an importer, changes nothing in
    /// the file, and every save fails.
    public init(model: Model, path: String, readerCacheKiB: Int? = nil, readOnly: Bool = false) throws {
        self.model = try model.validated()
        self.path = path
        schema = Schema(self.model)
        isReadOnly = readOnly
        // Refused before anything is changed: opening for writing switches a file to WAL mode.
        try Self.checkIsStoreOrNew(at: path, writing: !readOnly)
        var configuration = SQLiteConnectionPool.Configuration()
        configuration.busyTimeout = 30
        configuration.readOnly = readOnly
        configuration.prepare = { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            if !db.isReadOnly {
                // Index pages of a growing store are dirtied all over by every save; a
                // writer cache that holds them saves re-reading them each time.
                try db.execute(sql: "PRAGMA cache_size = -\(Self.writerCacheKiB)")
            } else if let readerCacheKiB {
                try db.execute(sql: "PRAGMA cache_size = -\(readerCacheKiB)")
            }
            try PredicateFunctions.register(db)
        }
        do {
            let pool = try SQLiteConnectionPool(path: path, shape: .wal, configuration: configuration)
            storeID = readOnly
                ? try pool.read { [schema] db in try Self.storeID(db, schema: schema, path: path) }
                : try pool.write { [schema] db in try Self.prepare(db, schema: schema, path: path) }
            store = SQLitePersistentStore(writer: pool, path: path, isInMemory: false)
        } catch let error as SQLiteError {
            throw StoreError.sqlite(error, path: path)
        }
    }

    /// Opens a new, empty store held in memory only, as Core Data's `NSInMemoryStoreType`
    /// and SwiftData's `isStoredInMemoryOnly`: for tests and scratch work. It behaves as a
    /// SQLite store (the same SQL, history, locking and batch path), lives as long as this
    /// coordinator, and only this coordinator's contexts reach it. Its `path` is
    /// `memory:` followed by its store ID, for messages.
    /// - Throws: `ModelError` for an invalid model.
    public init(inMemory model: Model) throws {
        self.model = try model.validated()
        schema = Schema(self.model)
        isReadOnly = false
        var configuration = SQLiteConnectionPool.Configuration()
        configuration.prepare = { db in try PredicateFunctions.register(db) }
        let placeholder = Self.inMemoryPrefix + "new"
        do {
            let queue = try SQLiteConnectionPool(inMemory: configuration)
            storeID = try queue.write { [schema] db in try Self.prepare(db, schema: schema, path: placeholder) }
            path = Self.inMemoryPrefix + storeID.uuidString.lowercased()
            store = SQLitePersistentStore(writer: queue, path: path, isInMemory: true)
        } catch let error as SQLiteError {
            throw StoreError.sqlite(error, path: placeholder)
        }
    }

    /// The SQL the store speaks.
    var dialect: SQLDialect { store.dialect }

    // MARK: - Access

    /// Free bytes on the file system holding `path`: the nearest of it and its parents that
    /// exists, else the working directory's. (IngestJSON's `IOError.freeBytes(near:)` does the
    /// same for the splitter's files; the two modules do not depend on each other.)
    static func freeBytes(near path: String) -> Int? {
        var info = statvfs()
        var directory = path
        while true {
            if statvfs(directory, &info) == 0 { return Int(info.f_bavail) * Int(info.f_frsize) }
            guard let slash = directory.lastIndex(of: "/"), slash != directory.startIndex else {
                return statvfs(directory.hasPrefix("/") ? "/" : ".", &info) == 0 ? Int(info.f_bavail) * Int(info.f_frsize) : nil
            }
            directory = String(directory[..<slash])
        }
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

    /// Runs `body` in one write transaction holding the store's write lock, on any store.
    func writing<T>(_ body: (StoreConnection) throws -> T) throws -> T {
        try store.writing(body)
    }

    /// Runs `body` with a connection that reads the last committed state, on any store.
    func reading<T>(_ body: (StoreConnection) throws -> T) throws -> T {
        try store.reading(body)
    }

    /// The JSON text stored under `key` in the store's metadata, or nil.
    /// - Throws: `StoreError.database` when the store cannot be read.
    public func metadata(forKey key: String) throws -> String? {
        try reading { connection in try Self.metadataText(key, connection) }
    }

    /// The metadata entry `key` as stored (JSON text), or nil, read on `connection` (inside
    /// a transaction or snapshot the caller holds).
    static func metadataText(_ key: String, _ connection: StoreConnection) throws -> String? {
        var value: String?
        try connection.query("SELECT value FROM \(quoted(metadataTable)) WHERE key = ?", [.string(key)]) { row in
            value = row.value(.string, 0)?.stringValue
        }
        return value
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
        let condition = info.entityCondition().map { " WHERE " + $0 } ?? ""
        return try reading { connection in Int(try connection.int64("SELECT count(*) FROM \(info.table)\(condition)") ?? 0) }
    }

    // MARK: - Save notices

    /// Calls `callback` (on the saving context's queue) after every save.
    /// Keep the token; `removeSaveObserver` stops the calls.
    @discardableResult
    public func addSaveObserver(_ callback: @escaping @Sendable (SaveNotice) -> Void) -> UUID {
        observers.add(callback)
    }

    public func removeSaveObserver(_ token: UUID) {
        observers.remove(token)
    }

    /// Every save from now on, as an async sequence; it ends when the task reading it is cancelled.
    public func saveNotices() -> AsyncStream<SaveNotice> {
        observers.stream()
    }

    var hasSaveObservers: Bool { !observers.isEmpty }

    func nextSaveSequence() -> Int { saveSequence.withLock { $0 += 1; return $0 } }

    /// The end of every save's transaction, on either path: the metadata staged with the
    /// rows, the tests' fault seams, and the save's sequence number.
    func finishSave(_ db: SQLiteDatabase, metadata: [String: String], history: HistoryChanges? = nil,
                    author: @autoclosure () -> String = "") throws -> Int {
        try finishSave(StoreConnection(kind: .sqlite(db)), metadata: metadata, history: history, author: author())
    }

    /// Sets the store metadata entries `metadata` in `connection`'s open transaction.
    static func writeMetadata(_ metadata: [String: String], on connection: StoreConnection) throws {
        for (key, value) in metadata {
            try connection.execute("INSERT INTO \(quoted(metadataTable)) (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                                   [.string(key), .string(value)])
        }
    }

    func finishSave(_ connection: StoreConnection, metadata: [String: String], history: HistoryChanges? = nil,
                    author: @autoclosure () -> String = "") throws -> Int {
        if let history, !history.isEmpty, recordsHistory { try HistoryLog.record(history, author: author(), on: connection) }
        try Self.writeMetadata(metadata, on: connection)
        try beforeCommit.withLock { $0 }?()
        if takeInjectedCommitFailure() {
            throw SQLiteError(.SQLITE_FULL, message: "database or disk is full")
        }
        return nextSaveSequence()
    }

    func post(_ notice: SaveNotice) {
        observers.post(notice)
    }

    // MARK: - Keys

    /// Reserves `count` row numbers for `entity` inside the current SQLite write
    /// transaction; returns the first of them (they are consecutive).
    func reserveKeys(_ count: Int, for entity: EntityInfo, _ db: SQLiteDatabase) throws -> Int64 {
        try SQLitePersistentStore.reserveKeys(count, for: entity, db)
    }

    /// The row number each entity's next new object will get: rows numbered from these
    /// on were made after this call (imports tell a record that repeats one of their
    /// own from one that meets an older object).
    /// - Throws: `StoreError.database` when the store cannot be read.
    public func nextRowNumbers() throws -> [String: Int64] {
        try read { db in
            var next: [String: Int64] = [:]
            for entity in schema.entities.values {
                next[entity.name] = try Int64.fetchOne(db, sql: "SELECT next FROM \(quoted(Self.sequenceTable)) WHERE entity = ?", arguments: [entity.rootName])
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
        try writing { connection in
            for key in keys {
                guard let newKey = rename(key) else { continue }
                try connection.execute("UPDATE \(quoted(Self.metadataTable)) SET key = ? WHERE key = ?", [.string(newKey), .string(key)])
            }
        }
    }

    /// Sets the entries `setting` (values as JSON text) and removes the keys `removing` from
    /// the store's metadata, in one transaction (an import's bookkeeping that must change
    /// together, such as a finished run and the rejects it replaced).
    /// - Throws: `StoreError.database` when the store cannot be written.
    package func updateMetadata(setting: [String: String], removing: [String]) throws {
        try writing { connection in
            try Self.writeMetadata(setting, on: connection)
            for key in removing {
                _ = try connection.execute("DELETE FROM \(quoted(Self.metadataTable)) WHERE key = ?", [.string(key)])
            }
        }
    }

    /// Reserves `count` permanent row numbers for `entity` in the current write
    /// transaction, on any store (not consecutive on PostgreSQL, whose sequences importers
    /// draw on at the same time).
    func reserveKeys(_ count: Int, for entity: EntityInfo, _ connection: StoreConnection) throws -> [Int64] {
        try store.reserveKeys(count, for: entity, connection)
    }

    /// Reserves permanent row numbers in a transaction of its own.
    func reserveKeys(_ count: Int, for entity: EntityInfo) throws -> [Int64] {
        try writing { connection in try reserveKeys(count, for: entity, connection) }
    }
}

extension PersistentStoreCoordinator {
    /// Every metadata entry whose key starts with `prefix`, as JSON text by key.
    /// - Throws: `StoreError.database` when the store cannot be read.
    public func metadata(withPrefix prefix: String) throws -> [String: String] {
        try reading { connection in
            var result: [String: String] = [:]
            try connection.query("SELECT key, value FROM \(quoted(Self.metadataTable)) WHERE substr(key, 1, length(?1)) = ?1",
                                 [.string(prefix)]) { row in
                if let key = row.value(.string, 0)?.stringValue, let value = row.value(.string, 1)?.stringValue { result[key] = value }
            }
            return result
        }
    }
}
