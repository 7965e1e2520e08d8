import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// Moves SQLite's WAL checkpoints off the writer during a bulk load.
///
/// In WAL mode the connection whose commit takes the log past 1,000 pages copies the
/// log back into the database and syncs it, inside that commit: with one writer shared
/// by many workers, every worker waits for it. While a checkpointer runs, the writer
/// does not checkpoint (`wal_autocheckpoint = 0`); a thread of its own, on a connection
/// of its own, runs a passive checkpoint (which never blocks the writer or readers)
/// every `interval` seconds, so the log stays short. `stop()` puts the writer's
/// automatic checkpoints back.
public final class WALCheckpointer: Sendable {
    private let coordinator: PersistentStoreCoordinator
    private let running = Atomic<Bool>(true)
    private let done = DispatchSemaphore(value: 0)
    /// Checkpoints run (for tests and reports).
    public let checkpoints = Atomic<Int>(0)

    /// Starts checkpointing `coordinator`'s store in the background.
    /// - Throws: `StoreError.database` when the checkpointing connection cannot be opened.
    public init(coordinator: PersistentStoreCoordinator, interval: Double = 0.2) throws {
        self.coordinator = coordinator
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: coordinator.path, configuration: configuration)
        } catch let error as DatabaseError {
            throw StoreError.database(error.message ?? "\(error)")
        }
        try coordinator.write { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
        let pause = UInt32(interval * 1e6)
        Thread.detachNewThread { [self] in
            defer { done.signal() }
            while running.load(ordering: .relaxed) {
                usleep(pause)
                _ = try? queue.inDatabase { db in try db.checkpoint(.passive) }
                checkpoints.add(1, ordering: .relaxed)
            }
        }
    }

    /// Stops the thread and gives checkpoints back to the writer.
    /// - Throws: `StoreError.database` when the writer cannot be told.
    public func stop() throws {
        guard running.exchange(false, ordering: .relaxed) else { return }
        done.wait()
        try coordinator.write { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = 1000") }
    }

    deinit { try? stop() }
}
