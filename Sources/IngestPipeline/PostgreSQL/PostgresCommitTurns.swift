import Foundation
import IngestStore
import Logging

/// Feed order for a PostgreSQL run, across every process joined to it: a chunk's saves
/// begin once every chunk before it is finished, whichever process holds it. So a key
/// given again in a later chunk ends with the later record's values, under every rule,
/// with any number of workers and processes, and the store equals a one-worker import;
/// and since only one chunk of a run writes at a time, no two saves wait for each other's
/// row locks (no deadlocks).
///
/// Workers map their chunks before they wait (the wait is for the write alone), and a
/// waiting worker holds no transaction. The save that finishes a chunk notifies the
/// waiters at its commit (LISTEN/NOTIFY), so a turn passes between processes at once. A chunk before the waiting one that nobody holds
/// (given back, or its process gone) would keep every waiter waiting while they hold the
/// chunks after it: the waiter gives its own chunk back (`ChunkYielded`) and claims again,
/// which takes the lowest free chunk first. A holder whose process is gone (none of its
/// connections is on the server any more: they carry `applicationName(of:)`) loses its
/// leases at once, not when they run out.
final class PostgresCommitTurns: @unchecked Sendable {
    let url: PostgresURL
    let run: Int
    let logger: Logger
    /// Whether the run stops (a signal): waiters give their chunks back.
    let shouldStop: @Sendable () -> Bool
    /// Whether the run failed in this process: waiters return.
    let hasFailed: @Sendable () -> Bool

    private let condition = NSCondition()
    /// Every chunk below this is finished (as last read, or finished here since).
    private var lowest = 1
    private var cancelled: Bool { hasFailed() }
    /// The connection the waiters share (one asks at a time), opened at the first wait.
    private var connection: PostgresConnection?
    private var asking = false
    /// Waiters following the one that asks.
    private var following = 0

    /// How long a chunk before a waiting one may stay free before the waiter gives its own back.
    static let freeGrace = 0.3
    /// The channel a save that finishes a chunk notifies, at its commit.
    static let channel = "_ingest_chunk_finished"
    /// How often a waiter reads the chunks' state without a notification (a lease that ran
    /// out, a process gone).
    static let pollSeconds = 0.25

    init(url: PostgresURL, run: Int, logger: Logger, shouldStop: @escaping @Sendable () -> Bool,
         hasFailed: @escaping @Sendable () -> Bool) {
        self.url = url
        self.run = run
        self.logger = logger
        self.shouldStop = shouldStop
        self.hasFailed = hasFailed
    }

    /// The name a process's connections carry on the server (`application_name`, at most 63
    /// bytes), by which others see that it is alive.
    static func applicationName(of process: String) -> String {
        "ingest " + (process.split(separator: ":").last ?? Substring(process)).prefix(40)
    }

    /// Marks `connection` as one of `process`'s.
    static func label(_ connection: PostgresConnection, process: String) throws {
        try connection.execute("SELECT set_config('application_name', $1, false)", [applicationName(of: process)])
    }

    /// This process committed the save that finished `chunk`. With every chunk before it
    /// known finished, so is every one before the next: that one's turn needs no read of the
    /// chunks (with one process, no save but the first waits for a query).
    func finished(_ chunk: Int) {
        condition.lock()
        if lowest >= chunk { lowest = chunk + 1 }
        condition.broadcast()
        condition.unlock()
    }

    /// Blocks until every chunk of the run before `chunk` is finished.
    /// - Throws: `ChunkYielded` when this worker should give `chunk` back (the chunk's lease
    ///   released: `owner` no longer holds it) and claim again, or the run stops;
    ///   `CommitTurnCancelled` when the run failed; the server's errors.
    func waitForTurn(_ chunk: Int, owner: String) throws {
        var freeSince: Double?
        var handOff = false
        while true {
            if handOff {
                // Others waited while this one asked: one of them, woken by the broadcast, asks
                // next. It may hold the chunk this one waits behind, which only its own read of
                // the chunks finds; asking again at once, this one starved it (seen: a waiter
                // never gave its later chunk back, in PostgresCommitTurnsTests).
                handOff = false
                usleep(2_000)
            }
            condition.lock()
            if cancelled {
                condition.unlock()
                throw CommitTurnCancelled()
            }
            if lowest >= chunk {
                condition.unlock()
                return
            }
            // One waiter at a time reads the chunks and listens; the others follow `lowest`.
            if asking {
                following += 1
                _ = condition.wait(until: Date(timeIntervalSinceNow: Self.pollSeconds))
                following -= 1
                condition.unlock()
                continue
            }
            asking = true
            condition.unlock()
            defer {
                condition.lock()
                asking = false
                handOff = following > 0
                condition.broadcast()
                condition.unlock()
            }
            let found = try firstUnfinished(before: chunk, owner: owner)
            condition.lock()
            lowest = max(lowest, found?.number ?? chunk)
            condition.broadcast()
            condition.unlock()
            guard let blocking = found else { continue }
            if shouldStop() {
                try giveBack(chunk, owner: owner)
                throw ChunkYielded()
            }
            // This worker holds the blocking chunk itself: its mapping stage claimed it ahead,
            // after it came free (a gone process's, or given back), while this wait was for a
            // later one. That chunk is saved only after this one, which waits for it: the
            // worker gives this chunk back and saves the earlier one first. (Found as a hang of
            // FeedOrderPropertyTests: every process's savers waited on one such chunk.)
            if blocking.heldByThisWorker {
                logger.debug("giving a chunk back to save the earlier one this worker holds", metadata: ["chunk": "\(chunk)", "held": "\(blocking.number)"])
                try giveBack(chunk, owner: owner)
                throw ChunkYielded()
            }
            if blocking.free {
                let now = StageTimes.now()
                if now - (freeSince ?? now) >= Self.freeGrace {
                    logger.debug("giving a chunk back to claim the free one before it", metadata: ["chunk": "\(chunk)", "free": "\(blocking.number)"])
                    try giveBack(chunk, owner: owner)
                    throw ChunkYielded()
                }
                freeSince = freeSince ?? now
            } else {
                freeSince = nil
                if blocking.holderGone, let holder = blocking.holder {
                    logger.warning("a process holding a chunk is gone; its chunks are free to claim",
                                   metadata: ["process": "\(holder)", "chunk": "\(blocking.number)"])
                    try release(holder)
                    continue
                }
            }
            // A save that finishes a chunk notifies at its commit (`ChunkLease.advance`).
            _ = try connection!.waitForNotification(seconds: blocking.free ? 0.05 : Self.pollSeconds)
        }
    }

    /// The first unfinished chunk before a waiting one.
    private struct Blocking {
        var number: Int
        /// Nobody holds it (given back, or its lease ran out).
        var free: Bool
        /// The process holding it.
        var holder: String?
        /// That process is gone: not running, or none of its connections is on the server.
        var holderGone: Bool
        /// The waiting worker holds it (its lease live).
        var heldByThisWorker: Bool
    }

    private func firstUnfinished(before chunk: Int, owner: String) throws -> Blocking? {
        let connection: PostgresConnection
        if let open = self.connection {
            connection = open
        } else {
            connection = try PostgresConnection(url)
            try connection.execute("LISTEN \(Self.channel)")
            self.connection = connection
        }
        let rows = try connection.execute("""
            SELECT c.number, c.owner IS NULL OR c.lease_until < now(), split_part(c.owner, '/', 1),
                p.state IS NOT NULL AND (p.state <> 'running'
                    OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.application_name = 'ingest ' || left(regexp_replace(p.id, '^.*:', ''), 40))),
                c.owner IS NOT DISTINCT FROM $3 AND c.lease_until >= now()
            FROM _ingest_chunks c LEFT JOIN _ingest_processes p ON p.id = split_part(c.owner, '/', 1)
            WHERE c.run = $1 AND c.finished IS NULL AND c.number < $2
            ORDER BY c.number LIMIT 1
            """, [String(run), String(chunk), owner])
        guard rows.count == 1 else { return nil }
        return Blocking(number: try rows.int(0, 0), free: rows[0, 1] == "t", holder: rows[0, 2].flatMap { $0.isEmpty ? nil : $0 },
                        holderGone: rows[0, 3] == "t", heldByThisWorker: rows[0, 4] == "t")
    }

    /// Gives `chunk` back: free to claim, from the marker its last save left.
    private func giveBack(_ chunk: Int, owner: String) throws {
        guard let connection else { return }
        try connection.execute("""
            UPDATE _ingest_chunks SET owner = NULL, lease_until = NULL WHERE run = $1 AND number = $2 AND owner = $3 AND finished IS NULL
            """, [String(run), String(chunk), owner])
        try PostgresChunkSource.notify(connection)
    }

    /// Frees the chunks of a process that is gone. A save of it that still came would find
    /// its chunk's marker moved or its lease another's (`ChunkLease.advance`), and write nothing.
    private func release(_ process: String) throws {
        guard let connection else { return }
        try connection.execute("""
            UPDATE _ingest_chunks SET owner = NULL, lease_until = NULL
            WHERE run = $1 AND left(owner, length($2) + 1) = $2 || '/' AND finished IS NULL
            """, [String(run), process])
        try PostgresChunkSource.notify(connection)
    }
}

/// A worker gave its chunk back before saving in it (an earlier chunk was free, or the run
/// stops): it claims again.
struct ChunkYielded: Error {}
