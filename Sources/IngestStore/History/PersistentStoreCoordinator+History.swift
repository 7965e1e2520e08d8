public import Foundation
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
                let next = try nextPosition(connection)
                return HistoryToken(storeID: storeID, position: next,
                                    fingerprint: try fingerprint(before: next, purged: try purgedBefore(connection), connection))
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
    ///   `StoreError.history` for a token of another store or a store without history, a
    ///   token ahead of the store's history or (SQLite) of a store since restored from a
    ///   backup or replaced by a copy, and a damaged history row; the store's errors.
    public func fetchHistory(after token: HistoryToken?, limit: Int = 10_000) throws -> HistoryFetch {
        if let token { try check(token) }
        let limit = max(1, limit)
        return try readingHistory { connection in
            let purged = try purgedBefore(connection)
            if let token, let purged, token.position < purged {
                throw StoreError.historyPurged(token: token.description, purgedBefore: "\(purged)")
            }
            if let token { try checkPlace(of: token, purged: purged, connection) }
            switch connection.kind {
            case .sqlite:
                let start = token?.position ?? purged ?? 0
                let transactions = try HistoryLog.read("position >= ?", [.int(start)], limit: limit, schema: schema, storeID: storeID,
                                                       token: { HistoryToken(storeID: storeID, position: $0 + 1, fingerprint: $1) }, connection)
                // Saves commit with synchronous=NORMAL: their WAL frames reach the disk at the next
                // checkpoint. What a consumer is given must outlive a power loss, so the frames this
                // read sees are flushed first (this read keeps the WAL from being restarted meanwhile).
                if !transactions.isEmpty { try store.makeSeenHistoryDurable() }
                if let last = transactions.last { return HistoryFetch(transactions: transactions, token: last.token) }
                return HistoryFetch(transactions: [], token: try token ?? HistoryToken(
                    storeID: storeID, position: start, fingerprint: try fingerprint(before: start, purged: purged, connection)))
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
                        token: { position, _ in HistoryToken(storeID: storeID, snapshot: base, page: .init(snapshot: target, after: position))! },
                        connection)
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
        guard !standby, previous != snapshot else { return snapshot }
        try store.makeSeenHistoryDurable()
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
            try checkPlace(of: token, purged: purged, connection)
            // The horizon's fingerprint outlives its transaction: tokens at the horizon still tell a restore.
            let horizon = connection.dialect == .sqlite ? try fingerprint(before: token.position, purged: purged, connection) : nil
            try connection.execute("DELETE FROM \(quoted(HistoryLog.changesTable)) WHERE position < ?", [.int(token.position)])
            try connection.execute("DELETE FROM \(quoted(HistoryLog.transactionsTable)) WHERE position < ?", [.int(token.position)])
            let upsert = "INSERT INTO \(quoted(Self.metadataTable)) (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            try connection.execute(upsert, [.string(HistoryLog.purgedKey), .string(String(token.position))])
            if let horizon {
                try connection.execute(upsert, [.string(HistoryLog.purgedFingerprintKey), .string(horizon)])
            } else if connection.dialect == .sqlite {
                try connection.execute("DELETE FROM \(quoted(Self.metadataTable)) WHERE key = ?", [.string(HistoryLog.purgedFingerprintKey)])
            }
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

    /// Refuses a token that does not belong to the store's history as it is now: one ahead
    /// of it, or (SQLite) one whose transaction before its position is another one now.
    /// Both mean the store went back (a restore from a backup, a copy put in its place):
    /// positions the consumer was given are reused, and it would miss their transactions.
    private func checkPlace(of token: HistoryToken, purged: Int64?, _ connection: StoreConnection) throws {
        let afresh = "fetch the objects afresh and continue from the current token (coordinator.currentHistoryToken(), or the last line of ingest history)"
        switch connection.kind {
        case .sqlite:
            let next = try nextPosition(connection)
            guard token.position <= next else {
                throw StoreError.history("token \(token) is ahead of \(path)'s history (its next position is \(next)): "
                    + "the store was restored from a backup or replaced by a copy since the token was taken; " + afresh)
            }
            guard let fingerprint = token.fingerprint else { return }
            let kept = try self.fingerprint(before: token.position, purged: purged, connection)
            // A purge made before fingerprints kept none for its horizon: nothing to compare.
            if kept == nil, token.position == purged { return }
            guard kept == fingerprint else {
                throw StoreError.history("token \(token) does not match \(path)'s history at position \(token.position - 1): "
                    + "the store was restored from a backup or replaced by a copy since the token was taken; " + afresh)
            }
        case .postgres:
            // Transaction IDs only grow: a snapshot with one the server has not given yet was
            // taken on another server, or before a restore took the server's history back.
            let xmax = try connection.int64("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint") ?? 0
            let xmin = max(token.snapshot.flatMap(HistoryToken.xmin(of:)) ?? 0, token.page.flatMap { HistoryToken.xmin(of: $0.snapshot) } ?? 0)
            guard xmin <= xmax else {
                throw StoreError.history("token \(token) is ahead of \(path)'s history (its next transaction is \(xmax)): "
                    + "the token is of another server, or the database was restored from a backup since the token was taken; " + afresh)
            }
        }
    }

    /// SQLite: the position the next history transaction will take (AUTOINCREMENT's
    /// sequence: the highest ever given, even when a purge emptied the table, plus one).
    private func nextPosition(_ connection: StoreConnection) throws -> Int64 {
        (try connection.int64("SELECT seq FROM sqlite_sequence WHERE name = ?", [.string(HistoryLog.transactionsTable)]) ?? 0) + 1
    }

    /// SQLite: the fingerprint of the transaction before `position`, from its row, or for
    /// the horizon of the last purge (which deleted that row) as the purge kept it; nil when
    /// neither has it.
    private func fingerprint(before position: Int64, purged: Int64?, _ connection: StoreConnection) throws -> String? {
        if position - 1 >= (purged ?? 0) { return try HistoryLog.fingerprint(at: position - 1, connection) }
        guard position == purged else { return nil }
        return try metadataText(HistoryLog.purgedFingerprintKey, connection)
    }

    private func purgedBefore(_ connection: StoreConnection) throws -> Int64? {
        try metadataText(HistoryLog.purgedKey, connection).flatMap { Int64($0) }
    }

    private func metadataText(_ key: String, _ connection: StoreConnection) throws -> String? {
        var value: String?
        try connection.query("SELECT value FROM \(quoted(Self.metadataTable)) WHERE key = ?", [.string(key)]) { row in
            value = row.value(.string, 0)?.stringValue
        }
        return value
    }

    /// Runs `body` in one snapshot of the store (on PostgreSQL a REPEATABLE READ
    /// transaction, so the xmin it reads is the one its reads see by).
    private func readingHistory<T>(_ body: (StoreConnection) throws -> T) throws -> T {
        try store.readingSnapshot { connection in
            guard try HistoryLog.exists(connection) else {
                throw StoreError.history(dialect == .sqlite
                    ? "\(path) has no history tables (it was last opened for writing by a version of Ingest without history; open it for writing once)"
                    : "\(path) has no history tables")
            }
            return try body(connection)
        }
    }

    /// Every history transaction after `token` (from the oldest kept when nil), as they
    /// commit, from any process, until the task reading it is cancelled.
    ///
    /// On SQLite it checks `PRAGMA data_version` every `interval` (and wakes at once for
    /// saves through this coordinator); on PostgreSQL it LISTENs for the saves' NOTIFY and
    /// fetches at least every `interval` (a transaction held back behind an older one that
    /// then rolls back sends no notice). It reads on a thread of its own and holds at most
    /// 1,000 transactions the reader has not taken. `interval` is taken between 1 ms and
    /// 24 hours.
    ///
    /// On SQLite the stream ends with `StoreError.history` when the file at `path` is
    /// deleted or replaced (a restore, a new store made there), or holds another store:
    /// the coordinator would go on reading the file it opened, which no one writes any more.
    /// - Throws (from the sequence): as `fetchHistory(after:)`; `StoreError.history` for a
    ///   SQLite store gone from its path.
    public func history(after token: HistoryToken?, interval: Duration = .milliseconds(100)) -> AsyncThrowingStream<HistoryTransaction, any Error> {
        let (stream, continuation) = AsyncThrowingStream<HistoryTransaction, any Error>.makeStream(bufferingPolicy: .bufferingOldest(1_000))
        let follower = HistoryFollower()
        continuation.onTermination = { _ in follower.stop() }
        let seconds = HistoryWaiter.clamped(Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18)
        Thread.detachNewThread { [self] in
            let observer = addSaveObserver { _ in follower.wake.signal() }
            defer { removeSaveObserver(observer) }
            do {
                let waiter = try store.changeWaiter(storeID: storeID)
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
