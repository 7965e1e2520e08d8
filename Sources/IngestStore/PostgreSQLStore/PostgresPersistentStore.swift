import Foundation

/// A store in a PostgreSQL database, reached through a pool of libpq connections. Writes
/// take the store's write lock (an advisory lock), so saves see each other as they do on
/// SQLite, whatever process or machine makes them.
struct PostgresPersistentStore: PersistentStore {
    let pool: PostgresPool

    /// The PostgreSQL advisory lock every write transaction of the object graph holds.
    static let writeLock = 727_002

    var dialect: SQLDialect { .postgres }

    func refusal(of value: Value) -> String? { PostgresValues.problem(value) }

    func writing<T>(_ body: (StoreConnection) throws -> T) throws -> T {
        try pool.with { connection in
            do {
                return try connection.transaction {
                    // Each statement sees what committed before it, so the lock's previous
                    // holder's rows are seen once it is taken, whatever the server's default isolation.
                    try PostgresSQL.run("SET TRANSACTION ISOLATION LEVEL READ COMMITTED", [], on: connection)
                    try PostgresSQL.run("SELECT pg_advisory_xact_lock(\(Self.writeLock))", [], on: connection)
                    return try body(StoreConnection(kind: .postgres(connection)))
                }
            } catch let error as PostgresError {
                throw StoreError.postgres(error)
            }
        }
    }

    func reading<T>(_ body: (StoreConnection) throws -> T) throws -> T {
        try pool.with { connection in try body(StoreConnection(kind: .postgres(connection))) }
    }

    /// A REPEATABLE READ transaction, so the xmin the history reads is the one its reads see by.
    func readingSnapshot<T>(_ body: (StoreConnection) throws -> T) throws -> T {
        try pool.with { postgres in
            do {
                return try postgres.transaction {
                    try postgres.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    return try body(StoreConnection(kind: .postgres(postgres)))
                }
            } catch let error as PostgresError {
                throw StoreError.postgres(error)
            }
        }
    }

    /// From the table's identity sequence, which importers draw on at the same time.
    func reserveKeys(_ count: Int, for entity: EntityInfo, _ connection: StoreConnection) throws -> [Int64] {
        try connection.int64s("SELECT nextval(pg_get_serial_sequence(?, '_pk')) FROM generate_series(1, ?)",
                              [.string(entity.table), .int(Int64(count))])
    }

    /// A commit that waits for the disk, begun after the history's snapshot was taken,
    /// flushes every record before it: importers commit without waiting, and a server
    /// crash could otherwise take back a commit a consumer was given.
    func makeSeenHistoryDurable() throws {
        try pool.with { other in
            do {
                try other.transaction {
                    try other.execute("SET LOCAL synchronous_commit = on")
                    _ = try other.execute("SELECT pg_current_xact_id()")
                }
            } catch let error as PostgresError {
                throw StoreError.postgres(error)
            }
        }
    }

    func changeWaiter(storeID: UUID) throws -> any StoreChangeWaiter {
        try PostgresChangeWaiter(url: pool.url)
    }
}
