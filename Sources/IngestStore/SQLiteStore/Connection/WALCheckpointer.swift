import CSQLite

/// Copies a bulk load's WAL into the database on a thread and connection of its own, so
/// that the writer's own checkpoints find little left to copy.
///
/// A bulk load lets the WAL grow to `PersistentStoreCoordinator.bulkLoadCheckpointPages`
/// before the writer checkpoints it, after a commit and still holding the write lock: on a
/// 300,000-record import that was two checkpoints of about 90 ms each, during which every
/// other save waited. Passive checkpoints here, every `interval` seconds, copy the frames
/// committed so far beside the writer (they never wait for it, nor it for them). The
/// writer's own checkpoint stays: only a checkpoint that finds every frame copied lets the
/// next write start the log over, and one running beside a busy writer rarely does, so
/// without it the WAL would grow to the size of the store.
final class WALCheckpointer: Sendable {
    private let thread = ManagedThread(name: "wal-checkpoint")
    private let path: String
    private let interval: Double

    /// A checkpointer of `path`, every `interval` seconds once started.
    init(path: String, interval: Double) {
        self.path = path
        self.interval = interval
    }

    /// Starts the checkpoints, until `stop()`. Without a connection of its own (the open
    /// failed) it does nothing: the writer's checkpoints still run.
    func start() {
        let path = path, interval = interval
        thread.start { stop in
            // Opened on the thread that uses it: a connection is not Sendable. Never made: a
            // store removed meanwhile is not the checkpointer's to create again.
            guard let connection = try? SQLiteDatabase(path: path, readOnly: false, busyTimeout: nil, creating: false) else { return }
            while !stop.wait(seconds: interval) {
                // SQLITE_BUSY (the writer is checkpointing) and the rest are the next round's to retry.
                _ = sqlite3_wal_checkpoint_v2(connection.sqliteConnection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            }
        }
    }

    /// Ends the checkpoints and waits for the thread to close its connection.
    func stop() {
        thread.stop()
    }

    deinit { thread.stop() }
}
