public import Foundation
import GRDB
import GRDBSQLite
import Synchronization

extension PersistentStoreCoordinator {
    /// Whether this coordinator's saves record history (on by default). A save made with
    /// it off is not in the history: consumers following by token do not see it.
    public var recordsHistory: Bool {
        get { historyEnabled.load(ordering: .relaxed) }
        set { historyEnabled.store(newValue, ordering: .relaxed) }
    }

    /// The token of "now": everything committed before this call is before it. Take it
    /// BEFORE fetching the objects a consumer starts from; changes committed between the
    /// two then come again (harmless to merge), and none is missed.
    /// - Throws: `StoreError.history` when the store has no history tables; the store's errors.
    public func currentHistoryToken() throws -> HistoryToken {
        try readingHistory { connection in
            switch connection.kind {
            case .sqlite:
                // The highest position ever given, even when a purge emptied the table.
                let last = try connection.int64("SELECT seq FROM sqlite_sequence WHERE name = ?", [.string(HistoryLog.transactionsTable)]) ?? 0
                return HistoryToken(storeID: storeID, position: last + 1)
            case .postgres:
                return try postgresToken(snapshot: try currentSnapshot(connection))
            }
        }
    }

    /// The history transactions after `token` (from the oldest kept when nil), at most
    /// `limit` of them, each with its changes, and the token to fetch after next time
    /// (Core Data's `NSPersistentHistoryChangeRequest.fetchHistory(after:)`).
    ///
    /// Exactly once: a transaction comes in the first fetch after its commit, and never
    /// again after a token that fetch (or one of its transactions) gave.
    /// - Throws: `StoreError.historyPurged` for a token from before a purge;
    ///   `StoreError.history` for a token of another store or a store without history;
    ///   the store's errors.
    public func fetchHistory(after token: HistoryToken?, limit: Int = 10_000) throws -> HistoryFetch {
        if let token { try check(token) }
        let limit = max(1, limit)
        return try readingHistory { connection in
            let purged = try purgedBefore(connection)
            if let token, let purged, token.position < purged {
                throw StoreError.historyPurged(token: token.description, purgedBefore: "\(purged)")
            }
            switch connection.kind {
            case .sqlite:
                let start = token?.position ?? purged ?? 0
                let transactions = try HistoryLog.read("position >= ?", [.int(start)], limit: limit, schema: schema, storeID: storeID,
                                                       token: { HistoryToken(storeID: storeID, position: $0 + 1) }, connection)
                // Saves commit with synchronous=NORMAL: their WAL frames reach the disk at the next
                // checkpoint. What a consumer is given must outlive a power loss, so the frames this
                // read sees are flushed first (this read keeps the WAL from being restarted meanwhile).
                if !transactions.isEmpty { HistoryLog.flushWAL(of: path) }
                return HistoryFetch(transactions: transactions, token: transactions.last?.token ?? HistoryToken(storeID: storeID, position: start))
            case .postgres:
                // Given so far: what the token's snapshot sees (nothing, for a first fetch, but
                // what a purge removed), and of a page, what its snapshot sees up to its position.
                let horizon = max(purged ?? 1, 1)
                let base = token?.snapshot ?? "\(horizon):\(horizon):"
                let target = try token?.page?.snapshot ?? currentSnapshot(connection, previous: token?.snapshot)
                let after = token?.page?.after ?? -1
                func read(base: String, target: String, after: Int64, limit: Int) throws -> [HistoryTransaction] {
                    try HistoryLog.read("""
                        position >= ? AND NOT pg_visible_in_snapshot(position::text::xid8, CAST(? AS pg_snapshot))
                        AND pg_visible_in_snapshot(position::text::xid8, CAST(? AS pg_snapshot)) AND position > ?
                        """, [.int(HistoryToken.xmin(of: base) ?? 0), .string(base), .string(target), .int(after)],
                        limit: limit, schema: schema, storeID: storeID,
                        token: { HistoryToken(storeID: storeID, snapshot: base, page: .init(snapshot: target, after: $0))! }, connection)
                }
                var transactions = try read(base: base, target: target, after: after, limit: limit)
                if transactions.count == limit { return HistoryFetch(transactions: transactions, token: transactions.last!.token) }
                // A page of an earlier fetch ran out: what committed since comes in the same fetch.
                var seen = target
                if token?.page != nil {
                    let now = try currentSnapshot(connection, previous: target)
                    let more = try read(base: target, target: now, after: -1, limit: limit - transactions.count)
                    transactions += more
                    if transactions.count == limit { return HistoryFetch(transactions: transactions, token: transactions.last!.token) }
                    seen = now
                }
                return HistoryFetch(transactions: transactions, token: try postgresToken(snapshot: seen))
            }
        }
    }

    /// The snapshot this transaction reads in, made durable first. The fetch gives the
    /// transactions it sees, and its token claims every transaction it saw ended: with
    /// commits that do not wait for the disk (importers'), a server crash could take such
    /// a commit back after a consumer was given it, or hand its ID to a later transaction
    /// the token would then skip. A commit that waits for the disk, begun after the
    /// snapshot was taken, flushes every record before it. Not needed when the snapshot is
    /// `previous` (an idle poll: nothing ended since).
    private func currentSnapshot(_ connection: StoreConnection, previous: String? = nil) throws -> String {
        var snapshot = ""
        var standby = false
        try connection.query("SELECT pg_current_snapshot()::text, pg_is_in_recovery()", cached: false) { row in
            snapshot = row.value(.string, 0)?.stringValue ?? ""
            standby = row.value(.bool, 1)?.boolValue ?? false
        }
        guard !standby, case .postgres(let pool) = backend, previous != snapshot else { return snapshot }
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
        return snapshot
    }

    private func postgresToken(snapshot: String) throws -> HistoryToken {
        guard let token = HistoryToken(storeID: storeID, snapshot: snapshot) else {
            throw StoreError.history("the server gave a snapshot Ingest cannot read: \(snapshot)")
        }
        return token
    }

    /// Deletes the history before `token`; a later fetch after an older token is refused
    /// with `StoreError.historyPurged`, never answered with a gap.
    /// - Throws: `StoreError.history` for a token of another store; the store's errors.
    public func purgeHistory(before token: HistoryToken) throws {
        try check(token)
        let now = try currentHistoryToken()
        // A horizon past now would refuse every consumer from then on.
        guard token.position <= now.position else {
            throw StoreError.history("token \(token) is ahead of the store's history (now \(now)): nothing before it can be purged yet")
        }
        try writing { connection in
            guard try HistoryLog.exists(connection) else { throw StoreError.history("\(path) has no history tables") }
            let purged = try purgedBefore(connection) ?? 0
            guard token.position > purged else { return }
            try connection.execute("DELETE FROM \(quoted(HistoryLog.changesTable)) WHERE position < ?", [.int(token.position)])
            try connection.execute("DELETE FROM \(quoted(HistoryLog.transactionsTable)) WHERE position < ?", [.int(token.position)])
            try connection.execute("INSERT INTO \(quoted(Self.metadataTable)) (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                                   [.string(HistoryLog.purgedKey), .string(String(token.position))])
        }
    }

    /// Deletes the history of transactions that committed before `date`.
    /// - Throws: as `purgeHistory(before:)`.
    public func purgeHistory(before date: Date) throws {
        let position = try readingHistory { connection in
            try connection.int64("SELECT min(position) FROM \(quoted(HistoryLog.transactionsTable)) WHERE time >= ?",
                                 [.double(date.timeIntervalSince1970)])
        }
        // Never past now: on PostgreSQL a transaction still open may hold a lower ID than one
        // that committed after `date`.
        let now = try currentHistoryToken()
        let horizon = min(position ?? now.position, now.position)
        if now.snapshot == nil {
            try purgeHistory(before: HistoryToken(storeID: storeID, position: horizon))
        } else if let token = HistoryToken(storeID: storeID, snapshot: "\(horizon):\(horizon):") {
            try purgeHistory(before: token)
        }
    }

    /// Refuses a token of another store, or of the other backend.
    private func check(_ token: HistoryToken) throws {
        guard token.storeID == storeID else {
            throw StoreError.history("token \(token) is of store \(token.storeID.uuidString.lowercased()), not of \(path) (\(storeID.uuidString.lowercased()))")
        }
        guard (token.snapshot == nil) == (dialect == .sqlite) else {
            throw StoreError.history("token \(token) is a \(token.snapshot == nil ? "SQLite" : "PostgreSQL") store's, not \(path)'s")
        }
    }

    private func purgedBefore(_ connection: StoreConnection) throws -> Int64? {
        var value: Int64?
        try connection.query("SELECT value FROM \(quoted(Self.metadataTable)) WHERE key = ?", [.string(HistoryLog.purgedKey)]) { row in
            value = row.value(.string, 0)?.stringValue.flatMap { Int64($0) }
        }
        return value
    }

    /// Runs `body` in one snapshot of the store (on PostgreSQL a REPEATABLE READ
    /// transaction, so the xmin it reads is the one its reads see by).
    private func readingHistory<T>(_ body: (StoreConnection) throws -> T) throws -> T {
        switch backend {
        case .sqlite:
            return try read { db in
                let connection = StoreConnection(kind: .sqlite(db))
                guard try HistoryLog.exists(connection) else { throw StoreError.history("\(path) has no history tables (it was last opened for writing by a version of Ingest without history; open it for writing once)") }
                return try body(connection)
            }
        case .postgres(let pool):
            return try pool.with { postgres in
                do {
                    return try postgres.transaction {
                        try postgres.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                        let connection = StoreConnection(kind: .postgres(postgres))
                        guard try HistoryLog.exists(connection) else { throw StoreError.history("\(path) has no history tables") }
                        return try body(connection)
                    }
                } catch let error as PostgresError {
                    throw StoreError.postgres(error)
                }
            }
        }
    }

    /// Every history transaction after `token` (from the oldest kept when nil), as they
    /// commit, from any process, until the task reading it is cancelled.
    ///
    /// On SQLite it checks `PRAGMA data_version` every `interval` (and wakes at once for
    /// saves through this coordinator); on PostgreSQL it LISTENs for the saves' NOTIFY and
    /// fetches at least every `interval` (a transaction held back behind an older one that
    /// then rolls back sends no notice). It reads on a thread of its own and holds at most
    /// 1,000 transactions the reader has not taken.
    /// - Throws (from the sequence): as `fetchHistory(after:)`.
    public func history(after token: HistoryToken?, interval: Duration = .milliseconds(100)) -> AsyncThrowingStream<HistoryTransaction, any Error> {
        let (stream, continuation) = AsyncThrowingStream<HistoryTransaction, any Error>.makeStream(bufferingPolicy: .bufferingOldest(1_000))
        let follower = HistoryFollower()
        continuation.onTermination = { _ in follower.stop() }
        let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        Thread.detachNewThread { [self] in
            let observer = addSaveObserver { _ in follower.wake.signal() }
            defer { removeSaveObserver(observer) }
            do {
                let waiter = try HistoryWaiter(self)
                var next = token
                while !follower.isStopped {
                    let fetch = try fetchHistory(after: next, limit: 1_000)
                    for transaction in fetch.transactions {
                        // A full buffer drops the element: offer it again until the reader makes room.
                        while case .dropped = continuation.yield(transaction) {
                            if follower.isStopped { return }
                            Thread.sleep(forTimeInterval: 0.005)
                        }
                    }
                    next = fetch.token
                    if fetch.transactions.count == 1_000 { continue }
                    try waiter.wait(seconds: seconds, follower)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        return stream
    }
}

/// A history stream's stop flag and wake-up, shared by its thread and its reader.
final class HistoryFollower: Sendable {
    private let stopped = Atomic(false)
    let wake = DispatchSemaphore(value: 0)

    var isStopped: Bool { stopped.load(ordering: .relaxed) }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        wake.signal()
    }
}

/// Waits for another commit to the store: `PRAGMA data_version` on a connection of its own
/// on SQLite, LISTEN on PostgreSQL.
final class HistoryWaiter {
    private enum Source {
        case sqlite(OpaquePointer, version: Int64)
        case postgres(PostgresConnection)
    }

    private var source: Source

    init(_ coordinator: PersistentStoreCoordinator) throws {
        switch coordinator.backend {
        case .sqlite:
            var db: OpaquePointer?
            guard sqlite3_open_v2(coordinator.path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db else {
                sqlite3_close(db)
                throw StoreError.database("cannot open \(coordinator.path) to follow its history")
            }
            sqlite3_busy_timeout(db, 5_000)
            source = .sqlite(db, version: Self.dataVersion(db))
        case .postgres(let pool):
            let connection = try PostgresPool.connect(pool.url)
            do { try connection.execute("LISTEN \(HistoryLog.channel)") } catch { throw StoreError.postgres(error) }
            source = .postgres(connection)
        }
    }

    deinit {
        if case .sqlite(let db, _) = source { sqlite3_close(db) }
    }

    private static func dataVersion(_ db: OpaquePointer) -> Int64 {
        var statement: OpaquePointer?
        defer { sqlite3_finalize(statement) }
        guard sqlite3_prepare_v2(db, "PRAGMA data_version", -1, &statement, nil) == SQLITE_OK, sqlite3_step(statement) == SQLITE_ROW else { return -1 }
        return sqlite3_column_int64(statement, 0)
    }

    /// Returns when another commit may have added history, or after `seconds` on PostgreSQL.
    func wait(seconds: Double, _ follower: HistoryFollower) throws {
        switch source {
        case .sqlite(let db, let version):
            while !follower.isStopped {
                // A save through this coordinator signals at once; another process's shows in data_version.
                let woken = follower.wake.wait(timeout: .now() + seconds) == .success
                let now = Self.dataVersion(db)
                if woken || now != version {
                    source = .sqlite(db, version: now)
                    return
                }
            }
        case .postgres(let connection):
            do { _ = try connection.waitForNotification(seconds: seconds) } catch { throw StoreError.postgres(error) }
        }
    }
}
