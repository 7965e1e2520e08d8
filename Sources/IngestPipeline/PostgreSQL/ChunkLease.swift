import IngestJSON
import IngestStore

/// A chunk a process holds: claimed with `SELECT … FOR UPDATE SKIP LOCKED`, kept by the
/// process's heartbeat, and lost when the heartbeat stops for longer than the lease
/// (then any process may claim it and go on from its marker).
struct ChunkLease: Sendable {
    var run: Int
    var number: Int
    var firstRecord: Int
    var records: Int
    /// Records of the chunk done (committed with their rows).
    var done: Int
    var checksum: String

    /// A save found the chunk claimed by another process (this one's lease ran out).
    typealias Lost = ChunkTakenOver

    /// Claims the first chunk of `run` that no live process holds, or nil when there is none now.
    /// Chunks whose bytes are not stored (kept by the process that split them) are claimed
    /// only up to `keptUpTo`: the last chunk this process's own split has written (the split
    /// writes them in order); other processes pass 0 and claim stored chunks only.
    static func claim(run: Int, owner: String, leaseSeconds: Double, keptUpTo: Int = 0,
                      _ connection: PostgresConnection) throws -> ChunkLease? {
        try connection.execute("BEGIN")
        do {
            let rows = try connection.execute("""
                SELECT number, first_record, records, done, checksum FROM _ingest_chunks
                WHERE run = $1 AND finished IS NULL AND (owner IS NULL OR lease_until < now())
                    AND (number <= $2 OR octet_length(bytes) > 0)
                    AND EXISTS (SELECT 1 FROM _ingest_runs r WHERE r.run = $1 AND r.state = 'running')
                ORDER BY number LIMIT 1 FOR UPDATE SKIP LOCKED
                """, [String(run), String(keptUpTo)])
            guard rows.count == 1 else {
                try connection.execute("COMMIT")
                return nil
            }
            let lease = ChunkLease(run: run, number: try rows.int(0, 0), firstRecord: try rows.int(0, 1), records: try rows.int(0, 2),
                                   done: try rows.int(0, 3), checksum: try rows.text(0, 4))
            try connection.execute("""
                UPDATE _ingest_chunks SET owner = $3, lease_until = now() + make_interval(secs => $4)
                WHERE run = $1 AND number = $2
                """, [String(run), String(lease.number), owner, String(leaseSeconds)])
            try connection.execute("COMMIT")
            return lease
        } catch {
            _ = try? connection.rollback()
            throw error
        }
    }

    /// Whether `run` is still running (not finished, and not left by `--abandon-run`).
    static func isRunning(run: Int, _ connection: PostgresConnection) throws -> Bool {
        try connection.execute("SELECT 1 FROM _ingest_runs WHERE run = $1 AND state = 'running'", [String(run)]).count == 1
    }

    /// Chunks of `run` not finished yet (held by a process or waiting).
    static func unfinished(run: Int, _ connection: PostgresConnection) throws -> Int {
        try connection.execute("SELECT count(*) FROM _ingest_chunks WHERE run = $1 AND finished IS NULL", [String(run)]).int(0, 0)
    }

    /// The run's unfinished chunks but those the workers of `process` hold.
    static func unfinished(run: Int, notHeldBy process: String, _ connection: PostgresConnection) throws -> Int {
        try connection.execute("""
            SELECT count(*) FROM _ingest_chunks WHERE run = $1 AND finished IS NULL
                AND (owner IS NULL OR left(owner, length($2) + 1) <> $2 || '/')
            """, [String(run), process]).int(0, 0)
    }

    /// The run's unfinished chunks when no process but `process` is importing it (none other
    /// running with a heartbeat within the run's lease), else nil. Asked by a process that
    /// marked itself finished: of two processes ending at once, the later one's read sees the
    /// other's mark, so one of them finds the chunks left.
    static func orphaned(run: Int, endingProcess process: String, _ connection: PostgresConnection) throws -> Int? {
        let rows = try connection.execute("""
            SELECT (SELECT count(*) FROM _ingest_chunks WHERE run = $1 AND finished IS NULL),
                EXISTS (SELECT 1 FROM _ingest_processes p, _ingest_runs r
                        WHERE p.run = $1 AND r.run = $1 AND p.id <> $2 AND p.state = 'running'
                          AND p.heartbeat > now() - make_interval(secs => (r.record::json->>'leaseSeconds')::float8))
            """, [String(run), process])
        let left = try rows.int(0, 0)
        return left > 0 && rows[0, 1] == "f" ? left : nil
    }

    /// Inside a save's transaction, first: moves the chunk's marker to `done` and renews the
    /// lease, locking the chunk's row so no claim can take it before the commit. The save
    /// that finishes the chunk drops its bytes, as a finished run's chunk files are deleted.
    /// - Throws: `Lost` when another worker holds the chunk now, or has saved in it since.
    func advance(from previous: Int, to done: Int, owner: String, leaseSeconds: Double, _ connection: PostgresConnection) throws {
        // The run must still be running when this save commits: the key-share lock makes an
        // --abandon-run of it (which locks the row FOR UPDATE first) wait for this save, and
        // every later save see it abandoned; the split's updates of the run's record (no key
        // changes) go on beside it.
        // The marker must still read what this worker last saved: a compare-and-set on top
        // of the owner check, so no two claims of one chunk can both write. Both statements
        // in one round trip; the update runs after the lock is taken, as it would alone.
        let results = try connection.pipeline([
            ("SELECT 1 FROM _ingest_runs WHERE run = $1 AND state = 'running' FOR KEY SHARE", [String(run)]),
            ("""
            UPDATE _ingest_chunks SET done = $3, lease_until = now() + make_interval(secs => $5),
                finished = CASE WHEN $3::integer >= records THEN now() END,
                bytes = CASE WHEN $3::integer >= records THEN ''::bytea ELSE bytes END
            WHERE run = $1 AND number = $2 AND owner = $4 AND finished IS NULL AND done = $6
            """, [String(run), String(number), String(done), owner, String(leaseSeconds), String(previous)]),
        ])
        guard results[0].count == 1, results[1].changed == 1 else { throw Lost() }
        // Delivered when the save commits: the workers waiting for this chunk go on (`PostgresCommitTurns`).
        if done >= records { connection.enqueue("NOTIFY \(PostgresCommitTurns.channel)") }
    }

    /// Inside a save's transaction, after `advance`: the save's rejects (record index and
    /// JSON line), the census of its records' unmapped members, and the process's counts,
    /// `records` of them done, the chunk finished at `done`.
    func recordSave(rejects: [(index: Int, json: String)], members: MemberCensus, records: Int, done: Int, process: String,
                    _ connection: PostgresConnection) throws {
        // Their rows are not read: sent with the save's next statements (its history, its commit).
        for (index, json) in rejects {
            connection.enqueue("INSERT INTO _ingest_rejects VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                               [String(run), String(number), String(index), json])
        }
        if !members.isEmpty {
            connection.enqueue("INSERT INTO _ingest_members VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                               [String(run), String(number), String(done), try ImportMarker.jsonLine(members)])
        }
        connection.enqueue("UPDATE _ingest_processes SET records = records + $2, chunks = chunks + $3, heartbeat = now() WHERE id = $1",
                           [process, String(records), done >= self.records ? "1" : "0"])
    }
}

extension ChunkLease {
    /// The lease of `chunk` of `run`, `done` of its records done (in an extension, so the
    /// memberwise initializer stays).
    init(run: Int, chunk: ChunkInfo, done: Int) {
        self.init(run: run, number: chunk.index, firstRecord: chunk.firstRecord, records: chunk.records, done: done,
                  checksum: chunk.checksum)
    }

    /// The chunk as the split described it, `byteSize` its bytes' length.
    func chunk(byteSize: Int) -> ChunkInfo {
        ChunkInfo(index: number, firstRecord: firstRecord, records: records, byteSize: byteSize, checksum: checksum)
    }
}
