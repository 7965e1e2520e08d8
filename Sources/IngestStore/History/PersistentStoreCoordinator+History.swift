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
        try readingHistory { connection in try store.currentHistoryToken(historyScope, connection) }
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
            return try store.historyTransactions(after: token, purged: purged, limit: limit, historyScope, connection)
        }
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
            let horizon = try store.historyHorizon(before: token.position, purged: purged, historyScope, connection)
            try connection.execute("DELETE FROM \(quoted(HistoryLog.changesTable)) WHERE position < ?", [.int(token.position)])
            try connection.execute("DELETE FROM \(quoted(HistoryLog.transactionsTable)) WHERE position < ?", [.int(token.position)])
            let upsert = "INSERT INTO \(quoted(Self.metadataTable)) (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            try connection.execute(upsert, [.string(HistoryLog.purgedKey), .string(String(token.position))])
            try store.keepHistoryHorizon(horizon, connection)
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
        guard store.isOwnHistoryToken(token) else {
            throw StoreError.history("token \(token) is a \(token.snapshot == nil ? "SQLite" : "PostgreSQL") store's, not \(path)'s")
        }
    }

    /// Refuses a token that does not belong to the store's history as it is now: one ahead
    /// of it, or (SQLite) one whose transaction before its position is another one now.
    /// Both mean the store went back (a restore from a backup, a copy put in its place):
    /// positions the consumer was given are reused, and it would miss their transactions.
    private func checkPlace(of token: HistoryToken, purged: Int64?, _ connection: StoreConnection) throws {
        try store.checkHistoryPlace(of: token, purged: purged, historyScope, connection)
    }

    /// What the store's history code needs of the coordinator.
    var historyScope: HistoryScope { HistoryScope(schema: schema, storeID: storeID, path: path) }

    private func purgedBefore(_ connection: StoreConnection) throws -> Int64? {
        try Self.metadataText(HistoryLog.purgedKey, connection).flatMap { Int64($0) }
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
    /// 1,000 transactions the reader has not taken (the thread waits for the reader to take
    /// one; none is dropped). `interval` is taken between 1 ms and
    /// 24 hours.
    ///
    /// On SQLite the stream ends with `StoreError.history` when the file at `path` is
    /// deleted or replaced (a restore, a new store made there), or holds another store:
    /// the coordinator would go on reading the file it opened, which no one writes any more.
    /// - Throws (from the sequence): as `fetchHistory(after:)`; `StoreError.history` for a
    ///   SQLite store gone from its path.
    public func history(after token: HistoryToken?, interval: Duration = .milliseconds(100)) -> AsyncThrowingStream<HistoryTransaction, any Error> {
        // Unbounded: the follower keeps at most `HistoryFollower.capacity` in it, waiting for
        // the reader to take one before it offers the next (none is ever dropped).
        let (stream, continuation) = AsyncThrowingStream<HistoryTransaction, any Error>.makeStream(bufferingPolicy: .unbounded)
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
                    let fetch = try fetchHistory(after: next, limit: HistoryFollower.capacity)
                    for transaction in fetch.transactions {
                        // Blocks while the reader holds `capacity` it has not taken: woken when it takes one.
                        guard follower.waitForRoom() else { return }
                        continuation.yield(transaction)
                    }
                    next = fetch.token
                    if fetch.transactions.count == HistoryFollower.capacity { continue }
                    try waiter.wait(seconds: seconds, follower)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        // The reader's side: each transaction it takes makes room for the next.
        let taking = HistoryTaking(stream.makeAsyncIterator())
        return AsyncThrowingStream {
            let transaction = try await taking.next()
            if transaction != nil { follower.took() }
            return transaction
        }
    }
}

/// A history stream's stop flag and wake-ups, shared by its thread and its reader.
final class HistoryFollower: Sendable {
    /// The most transactions the stream holds that its reader has not taken.
    static let capacity = 1_000

    private let stopped = Atomic(false)
    let wake = DispatchSemaphore(value: 0)
    /// Transactions offered to the reader and not taken yet.
    private let held = Mutex(0)
    /// Signalled each time the reader takes one (and at stop).
    private let taken = DispatchSemaphore(value: 0)

    var isStopped: Bool { stopped.load(ordering: .relaxed) }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        wake.signal()
        taken.signal()
    }

    /// Counts one more transaction held for the reader, first waiting (no polling) while it
    /// holds `capacity`; false when the stream stopped meanwhile.
    func waitForRoom() -> Bool {
        while !isStopped {
            let counted = held.withLock { held in
                guard held < Self.capacity else { return false }
                held += 1
                return true
            }
            if counted { return true }
            // A take between the count and this wait left its signal: it returns at once.
            taken.wait()
        }
        return false
    }

    /// The reader took a transaction.
    func took() {
        held.withLock { $0 -= 1 }
        taken.signal()
    }
}

/// The iterator of a history stream's inner buffer, for the one task reading the stream
/// (an `AsyncThrowingStream` has one reader at a time).
private final class HistoryTaking: @unchecked Sendable {
    private var iterator: AsyncThrowingStream<HistoryTransaction, any Error>.AsyncIterator

    init(_ iterator: AsyncThrowingStream<HistoryTransaction, any Error>.AsyncIterator) {
        self.iterator = iterator
    }

    func next() async throws -> HistoryTransaction? {
        try await iterator.next()
    }
}
