import Foundation

extension PersistentStoreCoordinator {
    /// Creates the schema in an empty file, or checks (and if it may, migrates) an
    /// existing store's model. Returns the store's ID.
    @_optimize(none)
    static func prepare(_ db: SQLiteDatabase, schema: Schema, path: String) throws -> UUID {
        let metadata = quoted(metadataTable)
        guard try db.tableExists(metadataTable) else {
            let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
            guard tables.isEmpty else {
                throw StoreError.notAStore(path: path, reason: "it has tables (\(tables.prefix(5).joined(separator: ", "))) but no \(metadataTable)")
            }
            let storeID = UUID()
            try db.execute(sql: "CREATE TABLE \(metadata) (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)")
            try db.execute(sql: "CREATE TABLE \(quoted(sequenceTable)) (entity TEXT PRIMARY KEY NOT NULL, next INTEGER NOT NULL)")
            for entity in schema.model.entities {
                for statement in schema.entity(entity.name)!.createStatements() { try db.execute(sql: statement) }
            }
            try writeModel(db, schema.model)
            for statement in HistoryLog.sqliteTables { try db.execute(sql: statement) }
            try db.execute(sql: "INSERT INTO \(metadata) (key, value) VALUES ('_storeID', ?), ('_formatVersion', ?)",
                           arguments: [json(storeID.uuidString), String(schema.model.hasDecimals ? formatVersion : 1)])
            return storeID
        }
        let version = try String.fetchOne(db, sql: "SELECT value FROM \(metadata) WHERE key = '_formatVersion'")
        try checkFormatVersion(version, path: path)
        guard let idText = try String.fetchOne(db, sql: "SELECT value FROM \(metadata) WHERE key = '_storeID'"),
              let storeID = UUID(uuidString: (try? JSONDecoder().decode(String.self, from: Data(idText.utf8))) ?? ""),
              let modelText = try String.fetchOne(db, sql: "SELECT value FROM \(metadata) WHERE key = '_model'"),
              let stored = try? JSONDecoder().decode(Model.self, from: Data(modelText.utf8)) else {
            throw StoreError.notAStore(path: path, reason: "its metadata has no store ID or model")
        }
        if stored.storedForm != schema.model {
            try migrate(db, from: stored, to: schema, path: path)
            try writeModel(db, schema.model)
        }
        // Stores made before placeholders were marked get the column on their first open for writing.
        for info in schema.entities.values {
            guard let add = info.addPlaceholderColumnSQL(.sqlite) else { continue }
            let present = try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM pragma_table_info(?) WHERE name = '_placeholder'",
                                            arguments: [info.rootName]) ?? false
            if !present { try db.execute(sql: add) }
        }
        if keepsDecimalsAsWritten(version, schema.model) { try canonicalizeDecimals(db, schema: schema) }
        // Stores made before history (0.17) get its tables on their first open for writing.
        if try !db.tableExists(HistoryLog.transactionsTable) {
            for statement in HistoryLog.sqliteTables { try db.execute(sql: statement) }
        }
        return storeID
    }

    /// An existing store's ID, read without writing: the store must hold `schema`'s model.
    @_optimize(none)
    static func storeID(_ db: SQLiteDatabase, schema: Schema, path: String) throws -> UUID {
        let metadata = quoted(metadataTable)
        if try db.tableExists(metadataTable) {
            try checkFormatVersion(try String.fetchOne(db, sql: "SELECT value FROM \(metadata) WHERE key = '_formatVersion'"), path: path)
        }
        guard try db.tableExists(metadataTable),
              let idText = try String.fetchOne(db, sql: "SELECT value FROM \(metadata) WHERE key = '_storeID'"),
              let storeID = UUID(uuidString: (try? JSONDecoder().decode(String.self, from: Data(idText.utf8))) ?? ""),
              let modelText = try String.fetchOne(db, sql: "SELECT value FROM \(metadata) WHERE key = '_model'"),
              let stored = try? JSONDecoder().decode(Model.self, from: Data(modelText.utf8)) else {
            throw StoreError.notAStore(path: path, reason: "its metadata has no store ID or model")
        }
        guard stored.storedForm == schema.model else {
            throw StoreError.modelMismatch(path: path, differences: ["it holds another model (opened read-only, so it is not migrated)"])
        }
        if keepsDecimalsAsWritten(try String.fetchOne(db, sql: "SELECT value FROM \(metadata) WHERE key = '_formatVersion'"), stored) {
            throw StoreError.modelMismatch(path: path, differences: ["its decimals are kept as written, by an earlier Ingest (opened read-only, so they are not made numbers)"])
        }
        return storeID
    }

    /// Whether a store of format `version` holding `model` keeps its decimals as they were
    /// written (format 1): they must be made canonical before they compare by number.
    static func keepsDecimalsAsWritten(_ version: String?, _ model: Model) -> Bool {
        (version.flatMap { Int($0) } ?? 1) < formatVersion && model.hasDecimals
    }

    /// Makes a format 1 store's decimals canonical (`7.800000` → `7.8`) and its decimal
    /// indexes ordered by number, then marks it format 2.
    /// - Throws: `StoreError.uniquenessConflict` when two keys turn out to be one number
    ///   (`7.8` and `7.80`): they are one object now, which the store cannot merge by itself.
    @_optimize(none)
    static func canonicalizeDecimals(_ db: SQLiteDatabase, schema: Schema) throws {
        // A hierarchy's table holds its members' columns: each (table, column) once.
        var columns: Set<[String]> = []
        for info in schema.entities.values {
            for attribute in info.attributes where attribute.type == .decimal { columns.insert([info.rootName, attribute.name]) }
        }
        for pair in columns.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            let (table, column) = (quoted(pair[0]), quoted(pair[1]))
            do {
                try db.execute(sql: """
                    UPDATE \(table) SET \(column) = ingest_decimal_canonical(\(column))
                    WHERE \(column) IS NOT ingest_decimal_canonical(\(column))
                    """)
            } catch let error as SQLiteError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.uniquenessConflict(["\(pair[0]).\(pair[1]): two keys are one number written two ways (such as 7.8 and 7.80), one decimal now; make them one object in the store, then open it again"])
            }
        }
        // Indexes built in byte order are made again in the decimals' order; one an import
        // dropped for its length is made so when it is restored.
        for info in schema.entities.values {
            for index in info.secondaryIndexes where index.create.contains(PredicateFunctions.decimalCollation) {
                guard try String.fetchOne(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name = ?", arguments: [index.name]) != nil else { continue }
                try db.execute(sql: "DROP INDEX \(quoted(index.name))")
                try db.execute(sql: index.create)
            }
        }
        try db.execute(sql: "INSERT OR REPLACE INTO \(quoted(metadataTable)) (key, value) VALUES ('_formatVersion', ?)", arguments: [String(formatVersion)])
    }

    /// Refuses a file that is neither an Ingest store nor empty (or absent), reading it
    /// only: a refused file is left exactly as it was.
    /// - Throws: `StoreError.notAStore`.
    public static func checkIsStoreOrNew(at path: String, writing: Bool = true) throws {
        try checkStorePath(path, writing: writing)
        guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int, size > 0 else { return }
        do {
            try readOnly(path) { db in
                guard try !db.tableExists(metadataTable) else { return }
                let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
                guard tables.isEmpty else {
                    throw StoreError.notAStore(path: path, reason: "it has tables (\(tables.prefix(5).joined(separator: ", "))) but no \(metadataTable)")
                }
            }
        } catch let error as SQLiteError {
            throw StoreError.sqlite(error, path: path)
        }
    }

    /// Refuses a store path that is neither a regular file nor free: SQLite would wait
    /// forever on a FIFO and fail on a device or directory, after a lock file was made
    /// beside it. A link is followed for reading; for writing it is refused, since the file
    /// it names is not Ingest's to turn into a store.
    /// - Throws: `StoreError.notAStore` saying what stands there.
    public static func checkStorePath(_ path: String, writing: Bool) throws {
        var link = stat()
        guard lstat(path, &link) == 0 else { return }
        var info = link
        let isLink = link.st_mode & S_IFMT == S_IFLNK
        if isLink {
            guard !writing else {
                let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "another file"
                throw StoreError.notAStore(path: path, reason: "it is a symbolic link to \(target); Ingest does not write through links (name the store file itself)")
            }
            guard stat(path, &info) == 0 else { return }
        }
        let kind: String
        switch info.st_mode & S_IFMT {
        case S_IFREG: return
        case S_IFDIR: kind = "a directory"
        case S_IFIFO: kind = "a FIFO"
        case S_IFCHR, S_IFBLK: kind = "a device"
        case S_IFSOCK: kind = "a socket"
        default: kind = "not a regular file"
        }
        throw StoreError.notAStore(path: path, reason: "it is \(kind)\(isLink ? " (through a symbolic link)" : "")")
    }

    /// Reads the store at `path` on a read-only connection. A process killed inside a write
    /// transaction leaves a hot journal, which only a connection that may write rolls back
    /// (SQLite's own recovery): that is done once, then the read again. Found by probing: a
    /// kill while an import made its store left every later import, resume and status
    /// failing with "attempt to write a readonly database".
    ///
    /// An importer may hold a lock for a moment (creating the schema, recovering the WAL
    /// after a crash): the read waits as the store's own connections do, never fails at once.
    static func readOnly<T>(_ path: String, _ body: (SQLiteDatabase) throws -> T) throws -> T {
        try checkStorePath(path, writing: false)
        var configuration = SQLiteConnectionPool.Configuration()
        configuration.readOnly = true
        configuration.busyTimeout = 30
        do {
            return try SQLiteConnectionPool(path: path, shape: .single, configuration: configuration).read(body)
        } catch let error as SQLiteError where error.extendedResultCode == .SQLITE_READONLY_ROLLBACK {
            try SQLiteConnectionPool(path: path, shape: .single).read { db in _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
            return try SQLiteConnectionPool(path: path, shape: .single, configuration: configuration).read(body)
        }
    }

    private static func writeModel(_ db: SQLiteDatabase, _ model: Model) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO \(quoted(metadataTable)) (key, value) VALUES ('_model', ?), ('_modelHash', ?)",
                       arguments: [String(decoding: model.jsonData(), as: UTF8.self), json(model.hash)])
    }

    static func json(_ text: String) -> String {
        String(decoding: try! JSONEncoder().encode(text), as: UTF8.self)
    }

    /// Adds what the new model adds (`Schema.migration`); anything else is refused.
    @_optimize(none)
    private static func migrate(_ db: SQLiteDatabase, from old: Model, to schema: Schema, path: String) throws {
        let migration = schema.migration(from: old.storedForm, dialect: .sqlite)
        guard migration.differences.isEmpty else { throw StoreError.modelMismatch(path: path, differences: migration.differences) }
        for statement in migration.statements { try db.execute(sql: statement) }
    }
}

extension PersistentStoreCoordinator {
    /// Opens an existing store with the model it was made with (kept in its metadata),
    /// for tools that read any store: `ingest query`, `ingest status`. `path` is a file, or
    /// a `postgresql://` URL.
    /// - Throws: `StoreError.notAStore` when there is no file, or it is not an Ingest store;
    ///   `StoreError.postgres` when a PostgreSQL server cannot be reached.
    ///
    /// `readOnly` reads the store without writing anything, ever: no write lock, so an
    /// importer stopped mid-save never blocks it; on PostgreSQL, SELECT rights suffice.
    public convenience init(existingStoreAt path: String, readOnly: Bool = false) throws {
        if PostgresURL.isPostgres(path) {
            let url: PostgresURL
            do { url = try PostgresURL(path) } catch { throw StoreError.postgres(error) }
            let model = try Self.storedModel(at: url)
            if readOnly { try Self.makeDecimalsNumbers(url, model) }
            try self.init(model: model, postgres: url, readOnly: readOnly)
            return
        }
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreError.notAStore(path: path, reason: "there is no file there")
        }
        let model: Model
        let version: String?
        do {
            let text: String?
            (text, version) = try Self.readOnly(path) { db -> (String?, String?) in
                guard try db.tableExists(PersistentStoreCoordinator.metadataTable) else { return (nil, nil) }
                let table = quoted(PersistentStoreCoordinator.metadataTable)
                return (try String.fetchOne(db, sql: "SELECT value FROM \(table) WHERE key = '_model'"),
                        try String.fetchOne(db, sql: "SELECT value FROM \(table) WHERE key = '_formatVersion'"))
            }
            guard let text else { throw StoreError.notAStore(path: path, reason: "it has no Ingest model in its metadata") }
            try Self.checkFormatVersion(version, path: path)
            do {
                model = try JSONDecoder().decode(Model.self, from: Data(text.utf8))
            } catch let error as DecodingError {
                // Named by its field, as a pipeline's model is, not taken for a file of another program.
                throw StoreError.notAStore(path: path, reason: "its model ('_model' in \(PersistentStoreCoordinator.metadataTable)) is damaged: \(error.plainDescription)")
            }
        } catch let error as SQLiteError {
            throw StoreError.sqlite(error, path: path)
        }
        // A reader meets a store of an earlier Ingest's decimals once (as on PostgreSQL).
        if readOnly && Self.keepsDecimalsAsWritten(version, model) { _ = try PersistentStoreCoordinator(model: model, path: path) }
        try self.init(model: model, path: path, readOnly: readOnly)
    }

    /// A reader meets a store of an earlier Ingest's decimals (text) once: a writer of its
    /// own makes them numbers, as `ImportMarker` moves an older import's marker.
    private static func makeDecimalsNumbers(_ url: PostgresURL, _ model: Model) throws {
        do {
            if try PostgresStore.keepsDecimalsAsText(url, model) { _ = try PostgresStore(url: url, model: model) }
        } catch {
            throw StoreError.postgres(error)
        }
    }

    /// Refuses a store written in a format this version does not read (a later one's, or
    /// an edited value), rather than reading it as if it were its own.
    static func checkFormatVersion(_ text: String?, path: String) throws {
        guard let text else { return }
        guard let version = Int(text) else {
            throw StoreError.notAStore(path: path, reason: "its format version ('_formatVersion' in \(PersistentStoreCoordinator.metadataTable)) is '\(text)', not a number")
        }
        guard version <= PersistentStoreCoordinator.formatVersion else {
            throw StoreError.notAStore(path: path, reason: "it is in format \(version), made by a later Ingest; this one reads format \(PersistentStoreCoordinator.formatVersion)")
        }
    }

    /// The model a PostgreSQL store was made with.
    private static func storedModel(at url: PostgresURL) throws -> Model {
        let text: String?
        do {
            let connection = try PostgresConnection(url)
            guard try connection.execute("SELECT to_regclass('_ingest_store') IS NOT NULL")[0, 0] == "t" else {
                throw StoreError.notAStore(path: url.description, reason: "the database has no Ingest tables")
            }
            let rows = try connection.execute("SELECT value FROM _ingest_store WHERE key = 'model'")
            text = rows.count > 0 ? rows[0, 0] : nil
        } catch let error as PostgresError {
            throw StoreError.postgres(error)
        }
        guard let text, let model = try? JSONDecoder().decode(Model.self, from: Data(text.utf8)) else {
            throw StoreError.notAStore(path: url.description, reason: "it has no Ingest model")
        }
        return model
    }
}
