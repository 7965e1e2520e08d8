import IngestStore

/// The status of a PostgreSQL store, read from its `_ingest_*` tables (`PostgresStatus`)
/// into the terms both backends share.
extension ImportStatus {
    /// The status of the PostgreSQL store at `url` (its runs may be empty: a store made
    /// before any run was registered).
    @_optimize(none)
    static func readPostgres(url: PostgresURL) throws -> ImportStatus {
        let status = try PostgresStatus.read(url: url)
        let runs = status.runs.map { run in
            var mapped = Run(number: run.number, state: run.state, feed: run.feed, pipeline: nil, chunks: "",
                             chunkCount: run.chunkCount, chunkSize: 0, saveEvery: nil, chunksComplete: run.chunksFinished,
                             recordsDone: run.recordsDone, rejected: run.rejected, started: run.started, ended: run.ended,
                             inferred: false, outcomes: nil, members: run.members)
            mapped.records = run.records
            mapped.chunksHeld = run.chunksHeld
            mapped.chunksKept = run.chunksKept
            mapped.keptBy = run.keptBy
            mapped.keptIn = run.keptIn
            mapped.keeperAlive = run.keeperAlive
            mapped.liveProcesses = run.liveProcesses
            mapped.replayed = run.replayLinks.map(Run.Replayed.init)
            return mapped
        }
        let processes = status.processes.map {
            Process(id: $0.id, host: $0.host, pid: $0.pid, workers: $0.workers, state: $0.state, alive: $0.alive,
                    suspended: $0.suspended, chunks: $0.chunks, records: $0.records, holding: $0.holding,
                    seconds: $0.seconds, secondsSinceHeartbeat: $0.secondsSinceHeartbeat)
        }
        return ImportStatus(store: status.store, runs: runs, counts: status.counts,
                            finished: !runs.contains { $0.state == "running" }, indexesDeferred: false,
                            processes: processes, rejects: status.rejects)
    }
}
