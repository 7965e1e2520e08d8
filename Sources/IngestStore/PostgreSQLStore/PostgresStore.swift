import Foundation

/// An object graph's tables in a PostgreSQL database, and the bookkeeping tables of the
/// imports that write them. Opening one makes what is missing, in one transaction under
/// an advisory lock, so many processes may open the same store at once.
///
/// One database (or one schema, chosen with libpq's `options=-csearch_path=…`) holds one
/// model: opening it with another model is refused, as a SQLite store refuses.
package final class PostgresStore: Sendable {
    package let url: PostgresURL
    package let model: Model
    let schema: Schema

    /// The object graph's metadata, written in the transaction of each save.
    static let metadataTable = "CREATE TABLE IF NOT EXISTS \"_ingest_metadata\" (key text COLLATE \"C\" PRIMARY KEY, value text NOT NULL)"

    /// The bookkeeping tables, made with the model's.
    static let bookkeeping = [
        "CREATE TABLE IF NOT EXISTS _ingest_store (key text PRIMARY KEY, value text NOT NULL)",
        metadataTable,
        """
        CREATE TABLE IF NOT EXISTS _ingest_runs (run integer PRIMARY KEY, state text NOT NULL, record text NOT NULL,
            started timestamptz NOT NULL DEFAULT now(), ended timestamptz)
        """,
        """
        CREATE TABLE IF NOT EXISTS _ingest_chunks (run integer NOT NULL, number integer NOT NULL, first_record bigint NOT NULL,
            records integer NOT NULL, bytes bytea NOT NULL, checksum text NOT NULL, done integer NOT NULL DEFAULT 0,
            owner text, lease_until timestamptz, finished timestamptz, PRIMARY KEY (run, number))
        """,
        // Chunks are read once and dropped when done: compressing them costs more than it saves.
        "ALTER TABLE _ingest_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL",
        """
        CREATE TABLE IF NOT EXISTS _ingest_processes (id text PRIMARY KEY, run integer NOT NULL, host text NOT NULL,
            pid integer NOT NULL, workers integer NOT NULL, started timestamptz NOT NULL DEFAULT now(),
            heartbeat timestamptz NOT NULL DEFAULT now(), chunks integer NOT NULL DEFAULT 0,
            records bigint NOT NULL DEFAULT 0, state text NOT NULL DEFAULT 'running')
        """,
        readsKeptColumn,
        """
        CREATE TABLE IF NOT EXISTS _ingest_rejects (run integer NOT NULL, chunk integer NOT NULL, index integer NOT NULL,
            record text NOT NULL, PRIMARY KEY (run, chunk, index))
        """,
        membersTable,
    ] + HistoryLog.postgresTables

    /// Per save, the census of the members its records held that the pipeline does not map
    /// (`MemberCensus` as JSON), by the chunk's marker after the save.
    /// Added in 0.15: the process reads the chunks the importing process keeps from its
    /// files, so none is stored for it.
    static let readsKeptColumn = "ALTER TABLE _ingest_processes ADD COLUMN IF NOT EXISTS reads_kept boolean NOT NULL DEFAULT false"

    static let membersTable = """
        CREATE TABLE IF NOT EXISTS _ingest_members (run integer NOT NULL, chunk integer NOT NULL, done integer NOT NULL,
            census text NOT NULL, PRIMARY KEY (run, chunk, done))
        """

    /// Opens the store at `url` for `model`, making its tables when the database has none.
    /// - Throws: `PostgresError.connection` when the server cannot be reached;
    ///   `.modelMismatch` when the database holds another model; `.unsupported` for a
    ///   model whose names PostgreSQL would cut; `.server` when a statement fails.
    ///
    /// `readOnly` makes nothing and takes no lock: the store must exist and hold `model`
    /// (for readers with SELECT rights only).
    @_optimize(none)
    package init(url: PostgresURL, model: Model, readOnly: Bool = false) throws(PostgresError) {
        self.url = url
        self.model = model
        schema = Schema(model)
        for info in schema.entities.values {
            if let long = info.postgresIdentifiers.first(where: { $0.utf8.count > 63 }) {
                throw .unsupported("the name \(long) is longer than PostgreSQL's 63 bytes")
            }
        }
        let connection = try PostgresConnection(url)
        if readOnly {
            guard try connection.execute("SELECT to_regclass('_ingest_store') IS NOT NULL")[0, 0] == "t" else {
                throw .notAStore(target: url.description)
            }
            let stored = try connection.execute("SELECT value FROM _ingest_store WHERE key = 'model.sha256'")
            guard stored.count == 1, stored[0, 0] == schema.model.hash else {
                throw .modelMismatch(target: url.description, reason: "its tables hold another model")
            }
            if model.hasDecimals, try !Self.textDecimals(schema, connection).isEmpty {
                throw .modelMismatch(target: url.description, reason: "its decimals are text, as an earlier Ingest kept them (opened read-only, so they are not made numbers)")
            }
            return
        }
        let schema = schema
        do {
            try connection.transaction {
                // One creator at a time: others wait here, then find the tables made.
                try connection.execute("SELECT pg_advisory_xact_lock(727001)")
                // A database (or schema) holding tables of the model's names that Ingest did not
                // make is refused by name, not by the first column its statements miss.
                // In the schema the tables will be made in, not anywhere on the search_path.
                if try connection.execute("SELECT to_regclass(quote_ident(current_schema()) || '._ingest_store') IS NULL")[0, 0] == "t" {
                    let taken = try Set(schema.entities.values.map(\.table)).sorted().filter { table in
                        try connection.execute("SELECT to_regclass(quote_ident(current_schema()) || '.' || $1) IS NOT NULL", [table])[0, 0] == "t"
                    }
                    if !taken.isEmpty { throw PostgresError.foreignTables(target: url.description, tables: taken) }
                }
                // Made once: statements on existing tables (ALTER TABLE) would lock out running imports.
                if try connection.execute("SELECT to_regclass('_ingest_chunks') IS NULL")[0, 0] == "t" {
                    for statement in Self.bookkeeping { try connection.execute(statement) }
                } else {
                    // A store made before the object graph ran on PostgreSQL, or before the census.
                    if try connection.execute("SELECT to_regclass('\"_ingest_metadata\"') IS NULL")[0, 0] == "t" {
                        try connection.execute(Self.metadataTable)
                    }
                    if try connection.execute("SELECT to_regclass('_ingest_members') IS NULL")[0, 0] == "t" {
                        try connection.execute(Self.membersTable)
                    }
                    if try connection.execute("SELECT to_regclass('\(HistoryLog.changesTable)') IS NULL")[0, 0] == "t" {
                        for statement in HistoryLog.postgresTables { try connection.execute(statement) }
                    }
                    // Once, when missing (found by review: the statement had gone with the new
                    // stores' tables only, and every import into an older store failed).
                    if try connection.execute("""
                        SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('_ingest_processes') AND attname = 'reads_kept'
                        """).count == 0 {
                        try connection.execute(Self.readsKeptColumn)
                    }
                }
                // The store's identity, in its object IDs and history tokens: made by the first
                // process that opens it for writing (an importer makes no coordinator of its own).
                try connection.execute("INSERT INTO _ingest_store VALUES ('store.id', upper(gen_random_uuid()::text)) ON CONFLICT DO NOTHING")
                // Replaced when their text changed, so a corrected definition reaches old stores.
                let functions = try Self.functions(connection)
                let version = SHA256Digest.hex(Array(functions.joined(separator: ";").utf8))
                if try connection.execute("SELECT value FROM _ingest_store WHERE key = 'functions.sha256'")[0, 0] != version {
                    for statement in functions { try connection.execute(statement) }
                    try connection.execute("""
                        INSERT INTO _ingest_store VALUES ('functions.sha256', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value
                        """, [version])
                }
                let stored = try connection.execute("SELECT value FROM _ingest_store WHERE key = 'model.sha256'")
                if stored.count == 1 {
                    if stored[0, 0] != schema.model.hash { try Self.migrate(schema, url: url, connection) }
                    try Self.decimalsAsNumbers(schema, connection)
                    try Self.collateText(schema, connection)
                    try Self.addPlaceholderColumns(schema, connection)
                    return
                }
                for info in schema.entities.values.sorted(by: { $0.name < $1.name }) {
                    for statement in info.createStatements(.postgres) { try connection.execute(statement) }
                }
                try connection.execute("INSERT INTO _ingest_store VALUES ('model.sha256', $1), ('model', $2)",
                                       [schema.model.hash, String(decoding: schema.model.jsonData(), as: UTF8.self)])
            }
        } catch let error as PostgresError where error.sqlState == .invalidSchemaName {
            // A search_path naming no existing schema.
            throw .noSchema(target: url.description)
        } catch let error as PostgresError {
            throw error
        } catch {
            throw .server("\(error)", sqlState: .internalError)
        }
    }

    /// Adds what `schema`'s model adds to the model the store holds (`Schema.migration`, as
    /// on SQLite), inside the opening transaction; anything else is refused.
    /// - Throws: `PostgresError.modelMismatch` naming the differences.
    @_optimize(none)
    private static func migrate(_ schema: Schema, url: PostgresURL, _ connection: PostgresConnection) throws {
        let text = try connection.execute("SELECT value FROM _ingest_store WHERE key = 'model'")
        guard text.count == 1, let old = try? Model.load(json: Data(try text.text(0, 0).utf8)) else {
            throw PostgresError.modelMismatch(target: url.description, reason: "its tables hold another model, whose description is missing from _ingest_store")
        }
        let migration = schema.migration(from: old.storedForm, dialect: .postgres)
        guard migration.differences.isEmpty else {
            let shown = migration.differences.prefix(5).joined(separator: "; ")
            throw PostgresError.modelMismatch(target: url.description, reason: shown + (migration.differences.count > 5 ? "; and \(migration.differences.count - 5) more" : ""))
        }
        for statement in migration.statements { try connection.execute(statement) }
        try connection.execute("UPDATE _ingest_store SET value = $1 WHERE key = 'model.sha256'", [schema.model.hash])
        try connection.execute("UPDATE _ingest_store SET value = $1 WHERE key = 'model'", [String(decoding: schema.model.jsonData(), as: UTF8.self)])
    }

    /// Tables made before placeholders were marked get the column (once: it takes a lock
    /// that running imports would wait for).
    private static func addPlaceholderColumns(_ schema: Schema, _ connection: PostgresConnection) throws(PostgresError) {
        for info in schema.entities.values {
            guard let add = info.addPlaceholderColumnSQL(.postgres) else { continue }
            let present = try connection.execute("""
                SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(quote_ident(current_schema()) || '.' || quote_ident($1)) AND attname = '_placeholder'
                """, [info.rootName])
            if present.count == 0 { try connection.execute(add) }
        }
    }

    /// Decimal columns made when decimals were text kept as written become `numeric`, each
    /// value canonical (`trim_scale`: `7.800000` is `7.8`, as `DecimalText` writes it), so
    /// that they order and compare by number. Once per column: the table is rewritten.
    /// - Throws: `PostgresError.server` naming the column when a value is no number, or two
    ///   keys turn out to be one number (`7.8` and `7.80`).
    private static func decimalsAsNumbers(_ schema: Schema, _ connection: PostgresConnection) throws(PostgresError) {
        for (info, name) in try textDecimals(schema, connection) {
            let column = quoted(name)
            do {
                try connection.execute("ALTER TABLE \(info.table) ALTER COLUMN \(column) TYPE numeric USING trim_scale(\(column)::numeric)")
            } catch .server(let message, let state, let sql) {
                throw .server("decimal column \(info.rootName).\(name), text until decimals were numbers, cannot become numeric: \(message)", sqlState: state, sql: sql)
            }
        }
    }

    /// The decimal columns an earlier Ingest made as text, by table.
    @_optimize(none)
    private static func textDecimals(_ schema: Schema, _ connection: PostgresConnection) throws(PostgresError) -> [(EntityInfo, String)] {
        var found: [(EntityInfo, String)] = []
        for info in schema.entities.values.sorted(by: { $0.name < $1.name }) where !info.needsEntityFilter {
            let decimals = Set(schema.entities.values.filter { $0.rootName == info.rootName }
                .flatMap { $0.attributes.filter { $0.type == .decimal }.map(\.name) })
            guard !decimals.isEmpty else { continue }
            let columns = try connection.execute("""
                SELECT column_name FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = $1 AND data_type = 'text'
                """, [info.rootName])
            for row in 0..<columns.count {
                let name = try columns.text(row, 0)
                if decimals.contains(name) { found.append((info, name)) }
            }
        }
        return found
    }

    /// Whether the store at `url` keeps decimals as text (an earlier Ingest made it): a
    /// writer's open makes them numbers (`init(url:model:)`), a reader's is refused.
    /// - Throws: `PostgresError`.
    static func keepsDecimalsAsText(_ url: PostgresURL, _ model: Model) throws(PostgresError) -> Bool {
        guard model.hasDecimals else { return false }
        return try !textDecimals(Schema(model), try PostgresConnection(url)).isEmpty
    }

    /// Text columns made before they were `COLLATE "C"` get it, so that text compares
    /// and sorts by its bytes, as on SQLite (and in memory), whatever the database's locale.
    @_optimize(none)
    private static func collateText(_ schema: Schema, _ connection: PostgresConnection) throws(PostgresError) {
        for info in schema.entities.values {
            let text = info.attributes.filter { $0.type == .string || $0.type == .uuid }.map(\.name)
            guard !text.isEmpty else { continue }
            let columns = try connection.execute("""
                SELECT column_name FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = $1 AND data_type = 'text' AND collation_name IS DISTINCT FROM 'C'
                """, [info.rootName])
            for row in 0..<columns.count {
                let name = try columns.text(row, 0)
                guard text.contains(name) else { continue }
                try connection.execute("ALTER TABLE \(info.table) ALTER COLUMN \(quoted(name)) TYPE text COLLATE \"C\"")
            }
        }
    }

    /// The SQL functions and the collation compiled predicates use (SQLite's are Swift
    /// functions registered on each connection: `PredicateFunctions`). Case folding, the
    /// localized order and regular expressions' character classes (`\w`, `[[:alpha:]]`)
    /// use ICU when the server has it, as Foundation does.
    static func functions(_ connection: PostgresConnection) throws(PostgresError) -> [String] {
        let icu = try connection.execute("SELECT count(*) FROM pg_collation WHERE collname = 'und-x-icu'")[0, 0] == "1"
        let lower = icu ? "lower(t COLLATE \"und-x-icu\")" : "lower(t)"
        return [
            icu ? "CREATE COLLATION IF NOT EXISTS ingest_localized (provider = icu, locale = 'und-u-kn-true')"
                : "CREATE COLLATION IF NOT EXISTS ingest_localized FROM \"C\"",
            // flags: 1 case-insensitive, 2 diacritic-insensitive ([c], [d], [cd]).
            """
            CREATE OR REPLACE FUNCTION ingest_fold(t text, flags integer) RETURNS text
            LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$
            SELECT CASE WHEN flags & 2 = 2
                THEN normalize(regexp_replace(normalize(CASE WHEN flags & 1 = 1 THEN \(lower) ELSE t END, NFD), '[\\u0300-\\u036f]', '', 'g'), NFC)
                ELSE CASE WHEN flags & 1 = 1 THEN \(lower) ELSE t END END
            $f$
            """,
            // Core Data's LIKE (`*`, `?`, `\` before a literal) as SQL's.
            """
            CREATE OR REPLACE FUNCTION ingest_like(t text, p text) RETURNS boolean
            LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $f$
            DECLARE
                pattern text := '';
                i integer := 1;
                n integer := length(p);
                c text;
            BEGIN
                WHILE i <= n LOOP
                    c := substr(p, i, 1);
                    IF c = '*' THEN pattern := pattern || '%';
                    ELSIF c = '?' THEN pattern := pattern || '_';
                    ELSIF c = '\\' AND i < n THEN i := i + 1; pattern := pattern || '\\' || substr(p, i, 1);
                    ELSIF c IN ('%', '_', '\\') THEN pattern := pattern || '\\' || c;
                    ELSE pattern := pattern || c;
                    END IF;
                    i := i + 1;
                END LOOP;
                RETURN t COLLATE "C" LIKE pattern;
            END
            $f$
            """,
            """
            CREATE OR REPLACE FUNCTION ingest_matches(t text, p text, flags integer) RETURNS boolean
            LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$
            SELECT (ingest_fold(t, flags) COLLATE \(icu ? "\"und-x-icu\"" : "\"default\"")) ~ ('^(?:' || ingest_fold(p, flags) || ')$')
            $f$
            """,
        ]
    }

    /// A new connection to the store.
    /// - Throws: `PostgresError.connection`.
    package func connect() throws(PostgresError) -> PostgresConnection { try PostgresConnection(url) }

    /// Every row of `entity`: its attributes in model order, then each to-one as the
    /// destination's key (or its row number when it has no key), all as text (nil for
    /// NULL). Dates are seconds since 2001 with 6 decimals, bools 0 or 1, as the SQLite
    /// store keeps them: for comparing two stores.
    /// - Throws: `PostgresError`.
    package func rows(of entity: String, _ connection: PostgresConnection) throws(PostgresError) -> [[String?]] {
        guard let info = schema.entity(entity) else { throw .unsupported("the model has no entity \(entity)") }
        var columns: [String] = info.attributes.map { attribute in
            let column = "t." + quoted(attribute.name)
            switch attribute.type {
            case .date: return "to_char(extract(epoch from \(column)) - 978307200, 'FM999999999990.000000')"
            case .bool: return "(\(column))::int::text"
            default: return "(\(column))::text"
            }
        }
        var joins = ""
        for (number, (relationship, column)) in info.toOneColumns.enumerated() {
            let destination = schema.entity(info.relationships[relationship].destination)!
            let key = destination.uniquenessConstraints.first?.first ?? "_pk"
            joins += " LEFT JOIN \(destination.table) d\(number) ON d\(number).\"_pk\" = t.\(quoted(column))"
            columns.append("(d\(number).\(quoted(key)))::text")
        }
        let condition = info.entityCondition(alias: "t").map { " WHERE " + $0 } ?? ""
        let rows = try connection.execute("SELECT " + (columns.isEmpty ? "1" : columns.joined(separator: ", ")) + " FROM \(info.table) t\(joins)\(condition)")
        return (0..<rows.count).map { row in (0..<columns.count).map { rows[row, $0] } }
    }
}
