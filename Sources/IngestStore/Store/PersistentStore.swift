import Foundation

/// What the object graph asks of the database that holds a store, in the spirit of GRDB's
/// `DatabaseReader`/`DatabaseWriter`: transactions under the store's write lock, reads of
/// the last committed state, snapshots for history, row numbers, and waits for commits
/// made elsewhere. Core Data's `NSPersistentStore` plays this part under a coordinator.
///
/// A coordinator holds one (`SQLitePersistentStore` for a file or a store in memory,
/// `PostgresPersistentStore` for a database); what differs in SQL spelling is told by
/// `dialect`, what differs in behaviour is a method here. Code outside the backends'
/// folders asks the store, not which backend it is.
protocol PersistentStore: HistoryPositions, Sendable {
    /// The SQL the store speaks.
    var dialect: SQLDialect { get }

    /// Why the store cannot hold `value` although the model accepts it (PostgreSQL's text
    /// holds no NUL byte), or nil: a save's validation names it.
    func refusal(of value: Value) -> String?

    /// Runs `body` in one write transaction holding the store's write lock: saves see each
    /// other whole, whatever process made them.
    /// - Throws: `StoreError` for the database's failures; what `body` throws (the
    ///   transaction is then rolled back).
    func writing<T>(_ body: (StoreConnection) throws -> T) throws -> T

    /// Runs `body` with a connection that reads the last committed state.
    /// - Throws: `StoreError` for the database's failures; what `body` throws.
    func reading<T>(_ body: (StoreConnection) throws -> T) throws -> T

    /// Runs `body` in one snapshot: every read in it sees the same committed state (the
    /// history's reads take their positions and rows from one instant).
    /// - Throws: as `reading`.
    func readingSnapshot<T>(_ body: (StoreConnection) throws -> T) throws -> T

    /// Reserves `count` permanent row numbers for `entity` inside the write transaction
    /// `connection` is in. They need not be consecutive (PostgreSQL's sequences are shared
    /// with other processes).
    /// - Throws: `StoreError` for the database's failures.
    func reserveKeys(_ count: Int, for entity: EntityInfo, _ connection: StoreConnection) throws -> [Int64]

    /// Makes the commits a history read just saw survive a crash of the machine before
    /// they are handed to a consumer (saves commit without waiting for the disk).
    /// - Throws: `StoreError` when the database cannot be reached.
    func makeSeenHistoryDurable() throws

    /// Something that waits for the next commit to the store, from any process: the
    /// history stream's wake-up. `storeID` is the store followed (a file replaced by
    /// another store ends the wait with an error).
    /// - Throws: `StoreError` when the store cannot be watched.
    func changeWaiter(storeID: UUID) throws -> any StoreChangeWaiter
}

/// Waits for the next commit to a store (see `PersistentStore.changeWaiter`).
protocol StoreChangeWaiter: AnyObject {
    /// Returns when another commit may have changed the store, when `follower` is woken
    /// (a save through this coordinator) or after `seconds` where the store cannot tell.
    /// Returns early, without a change, when the follower stops.
    /// - Throws: `StoreError` when the store is gone or the connection broke.
    func wait(seconds: Double, _ follower: HistoryFollower) throws
}

/// The history stream's waits, whatever the store.
enum HistoryWaiter {
    /// The longest wait between checks of a SQLite store's path or of the stop flag,
    /// whatever the interval.
    static let pathCheckSeconds = 0.5

    /// `seconds` between 1 ms and 24 hours: poll(2) takes milliseconds as an Int32, and a
    /// wait of zero would spin.
    static func clamped(_ seconds: Double) -> Double {
        seconds.isNaN ? 0.1 : min(max(seconds, 0.001), 86_400)
    }
}
