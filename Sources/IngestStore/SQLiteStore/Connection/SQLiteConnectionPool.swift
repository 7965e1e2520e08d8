import Foundation
import Synchronization
import CSQLite

/// The connections to one SQLite database, lent out one thread at a time, in one of two
/// shapes:
/// - `.wal`: a file in WAL mode, with one writer connection and up to
///   `maximumReaderCount` readers that never wait for it (GRDB's `DatabasePool`);
/// - `.single`: one connection for reads and writes alike (GRDB's `DatabaseQueue`): a
///   database in memory, which has no WAL, or a file read once.
///
/// Every `write` and `read` is one transaction, committed when its body returns and rolled
/// back when it throws. A `write` inside a `write`, or any call inside a `.single` pool's
/// own, would wait for itself: it stops the program with a message instead, as GRDB did.
final class SQLiteConnectionPool: @unchecked Sendable {
    // @unchecked: the connections are reached only under `writerLock` or `readers`.

    enum Shape { case wal, single }

    struct Configuration: Sendable {
        var readOnly = false
        /// How long a connection waits for another process's lock before SQLITE_BUSY.
        var busyTimeout: Double?
        var maximumReaderCount = 5
        /// Run on each connection as it opens (pragmas, functions, collations).
        var prepare: (@Sendable (SQLiteDatabase) throws -> Void)?
    }

    let path: String
    private let configuration: Configuration
    private let shape: Shape
    private var writer: SQLiteDatabase
    private let writerLock = NSLock()
    /// The thread holding `writerLock` (0: none), to refuse a call that would wait for itself.
    private let writerThread = Atomic<UInt>(0)
    private let readers = NSCondition()
    private var idleReaders: [SQLiteDatabase] = []
    private var openReaders = 0
    /// During a bulk load: the WAL copied into the database beside the writer.
    private let checkpointer = Mutex<WALCheckpointer?>(nil)

    /// Opens the writer connection (in WAL mode for `.wal`, unless read-only); readers open
    /// as reads need them.
    /// - Throws: `SQLiteError`.
    init(path: String, shape: Shape, configuration: Configuration = Configuration()) throws {
        self.path = path
        self.shape = shape
        self.configuration = configuration
        writer = try Self.open(path, configuration, readOnly: configuration.readOnly)
        if shape == .wal && !configuration.readOnly { try Self.setUpWAL(writer, path: path) }
    }

    deinit {
        // Readers close first: the last connection to close, the writer, checkpoints the
        // WAL into the file and removes it (a read-only one cannot).
        stopCheckpointing()
        idleReaders.removeAll()
    }

    /// A database in memory, held by the pool's one connection.
    /// - Throws: `SQLiteError`.
    convenience init(inMemory configuration: Configuration) throws {
        try self.init(path: ":memory:", shape: .single, configuration: configuration)
    }

    /// Runs `body` in one write transaction on the writer connection (`BEGIN IMMEDIATE`:
    /// the write lock is taken before anything is read).
    /// - Throws: `SQLiteError`; what `body` throws.
    func write<T>(_ body: (SQLiteDatabase) throws -> T) throws -> T {
        try withWriter { writer in
            try writer.inTransaction(immediate: !configuration.readOnly) { try body(writer) }
        }
    }

    /// Runs `body` on the writer connection under its lock; a writer left inside a
    /// transaction (its rollback failed) is replaced by a new connection.
    private func withWriter<T>(_ body: (SQLiteDatabase) throws -> T) throws -> T {
        if writerThread.load(ordering: .relaxed) == UInt(pthread_self()) {
            fatalError("SQLiteConnectionPool(\(path)): a write, or a read of a single-connection pool, inside a write of the same pool would wait for itself")
        }
        writerLock.lock()
        writerThread.store(UInt(pthread_self()), ordering: .relaxed)
        defer {
            // (A database in memory lives in its connection: it is kept whatever happens.)
            if writer.isStuckInTransaction, path != ":memory:", let fresh = try? Self.open(path, configuration, readOnly: configuration.readOnly) {
                writer = fresh
            }
            writerThread.store(0, ordering: .relaxed)
            writerLock.unlock()
        }
        return try body(writer)
    }

    /// Starts copying the WAL into the database on a thread of its own, every `interval`
    /// seconds, until `stopCheckpointing()` (a `.wal` pool that writes; others ignore it).
    func startCheckpointing(every interval: Double) {
        guard shape == .wal, !configuration.readOnly else { return }
        checkpointer.withLock { current in
            guard current == nil else { return }
            let checkpointer = WALCheckpointer(path: path, interval: interval)
            checkpointer.start()
            current = checkpointer
        }
    }

    /// Ends `startCheckpointing(every:)`'s checkpoints.
    func stopCheckpointing() {
        checkpointer.withLock { current in
            current?.stop()
            current = nil
        }
    }

    /// Runs `body` in one read transaction: its snapshot of the database holds to its end.
    /// - Throws: `SQLiteError`; what `body` throws.
    func read<T>(_ body: (SQLiteDatabase) throws -> T) throws -> T {
        guard shape == .wal else {
            return try withWriter { writer in try writer.inTransaction(immediate: false) { try body(writer) } }
        }
        let reader = try takeReader()
        defer { giveBack(reader) }
        return try reader.inTransaction(immediate: false) { try body(reader) }
    }

    private func takeReader() throws -> SQLiteDatabase {
        readers.lock()
        while idleReaders.isEmpty && openReaders >= configuration.maximumReaderCount { readers.wait() }
        if let reader = idleReaders.popLast() {
            readers.unlock()
            return reader
        }
        openReaders += 1
        readers.unlock()
        do {
            // The WAL's "obscure cases" of SQLITE_BUSY (a recovery, the last connection
            // closing) are waited out by readers too, for 10 s, as GRDB's pool did.
            var readerConfiguration = configuration
            readerConfiguration.busyTimeout = 10
            return try Self.open(path, readerConfiguration, readOnly: true)
        } catch {
            readers.lock()
            openReaders -= 1
            readers.signal()
            readers.unlock()
            throw error
        }
    }

    private func giveBack(_ reader: SQLiteDatabase) {
        readers.lock()
        // A reader left inside its transaction (its rollback failed) would pin its snapshot
        // and keep the WAL from being checkpointed: it is closed, not lent again.
        if reader.isStuckInTransaction { openReaders -= 1 } else { idleReaders.append(reader) }
        readers.signal()
        readers.unlock()
    }

    private static func open(_ path: String, _ configuration: Configuration, readOnly: Bool) throws -> SQLiteDatabase {
        let connection = try SQLiteDatabase(path: path, readOnly: readOnly, busyTimeout: configuration.busyTimeout)
        try configuration.prepare?(connection)
        return connection
    }

    /// WAL mode with synchronous=NORMAL, and a WAL file that is not empty: a read-only
    /// connection cannot open a WAL database whose -wal file is missing (SQLITE_CANTOPEN;
    /// GRDB issue 102 does the same).
    private static func setUpWAL(_ writer: SQLiteDatabase, path: String) throws {
        guard try String.fetchOne(writer, sql: "PRAGMA journal_mode = WAL") == "wal" else {
            throw SQLiteError(.SQLITE_ERROR, message: "could not switch \(path) to WAL mode")
        }
        try writer.execute(sql: "PRAGMA synchronous = NORMAL")
        let size = (try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int ?? 0
        if size == 0 {
            try writer.inTransaction(immediate: true) {
                try writer.execute(sql: "CREATE TABLE ingest_wal_start (id INTEGER PRIMARY KEY); DROP TABLE ingest_wal_start")
            }
        }
    }
}
