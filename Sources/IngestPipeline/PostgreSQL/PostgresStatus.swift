import Foundation
package import IngestStore
package import IngestJSON

/// Where the imports into a PostgreSQL store stand: its runs, the processes importing
/// the newest, and its row counts. Read while imports run; no password is in it.
package struct PostgresStatus: Sendable {
    package struct Run: Sendable {
        package var number: Int
        package var state: String
        package var feed: String
        package var chunkCount: Int
        package var chunksFinished: Int
        package var chunksHeld: Int
        /// Unfinished chunks whose bytes only the process that split them has (not stored in
        /// the database): it stores them when other processes want work.
        package var chunksKept: Int = 0
        /// That process, when some chunks are kept (see `chunksKept`).
        package var keptBy: String? = nil
        /// Where that process keeps their files (a process that can read them there claims them).
        package var keptIn: String? = nil
        /// Whether that process is alive (else a process that can read the feed stores them).
        package var keeperAlive = false
        package var records: Int
        package var recordsDone: Int
        package var rejected: Int
        package var started: String
        package var ended: String?
        /// Processes importing the run now (running, with a heartbeat within the lease):
        /// a running run with none was interrupted, and `ingest join` continues it.
        package var liveProcesses: Int = 0
        /// The members the run's records held that its pipeline does not map, so far.
        package var members = MemberCensus()
        /// A replay's links (`Replay.Link`), nil for a run of a feed.
        package var replayLinks: [Replay.Link]? = nil
    }

    package struct Process: Sendable {
        package var id: String
        package var host: String
        package var pid: Int
        package var workers: Int
        /// running, finished, stopped or failed, as the process last said.
        package var state: String
        /// Whether its heartbeat is within the lease (a running process that is not alive died,
        /// or is `suspended`).
        package var alive: Bool
        /// Running, without a heartbeat, and stopped by a signal on this machine (`kill -CONT`
        /// continues it), rather than dead (found by probing: it was called dead).
        package var suspended = false
        package var chunks: Int
        package var records: Int
        /// Chunks it holds now.
        package var holding: [Int]
        package var seconds: Double
        package var secondsSinceHeartbeat: Double
        package var recordsPerSecond: Double { seconds > 0 ? Double(records) / seconds : 0 }
    }

    package var store: String
    package var runs: [Run]
    /// The processes of the newest run, oldest first.
    package var processes: [Process]
    package var counts: [String: Int]
    /// The newest run's first rejects, each as its JSON line.
    package var rejects: [String]

    /// - Throws: `PostgresError` when the store cannot be reached or is not an Ingest store.
    @_optimize(none)
    package static func read(url: PostgresURL) throws -> PostgresStatus {
        let connection = try PostgresConnection(url)
        let tables = try connection.execute("SELECT to_regclass('_ingest_runs') IS NOT NULL")
        guard tables[0, 0] == "t" else {
            throw PostgresError.notAStore(target: url.description)
        }
        var status = PostgresStatus(store: url.description, runs: [], processes: [], counts: [:], rejects: [])
        let runs = try connection.execute("""
            SELECT r.run, r.state, r.record, to_char(r.started, 'YYYY-MM-DD HH24:MI:SS TZ'), to_char(r.ended, 'YYYY-MM-DD HH24:MI:SS TZ'),
                (SELECT count(*) FROM _ingest_chunks c WHERE c.run = r.run),
                (SELECT count(*) FROM _ingest_chunks c WHERE c.run = r.run AND c.finished IS NOT NULL),
                (SELECT count(*) FROM _ingest_chunks c WHERE c.run = r.run AND c.finished IS NULL AND c.lease_until > now()),
                (SELECT coalesce(sum(done), 0) FROM _ingest_chunks c WHERE c.run = r.run),
                (SELECT count(*) FROM _ingest_rejects j WHERE j.run = r.run),
                (SELECT count(*) FROM _ingest_processes p WHERE p.run = r.run AND p.state = 'running'
                    AND p.heartbeat > now() - make_interval(secs => (r.record::json->>'leaseSeconds')::float8)),
                (SELECT count(*) FROM _ingest_chunks c WHERE c.run = r.run AND c.finished IS NULL AND octet_length(c.bytes) = 0),
                EXISTS (SELECT 1 FROM _ingest_processes p WHERE p.id = r.record::json->>'splitProcess' AND p.state = 'running'
                    AND p.heartbeat > now() - make_interval(secs => (r.record::json->>'leaseSeconds')::float8))
            FROM _ingest_runs r ORDER BY r.run
            """)
        let decoder = JSONDecoder()
        for row in 0..<runs.count {
            guard let record = try? decoder.decode(PostgresRunRecord.self, from: Data(try runs.text(row, 2).utf8)) else {
                throw PostgresError.server("the record of run \(runs[row, 0] ?? "NULL") in _ingest_runs is damaged (not the JSON Ingest wrote)", sqlState: .dataCorrupted)
            }
            status.runs.append(Run(number: try runs.int(row, 0), state: try runs.text(row, 1), feed: record.feed, chunkCount: try runs.int(row, 5),
                                   chunksFinished: try runs.int(row, 6), chunksHeld: try runs.int(row, 7),
                                   chunksKept: try runs.int(row, 11), keptBy: try runs.int(row, 11) > 0 ? record.splitProcess : nil,
                                   keptIn: try runs.int(row, 11) > 0 ? record.splitDirectory : nil, keeperAlive: runs[row, 12] == "t",
                                   records: record.records,
                                   recordsDone: try runs.int(row, 8), rejected: try runs.int(row, 9), started: try runs.text(row, 3), ended: runs[row, 4],
                                   liveProcesses: try runs.int(row, 10),
                                   members: try PostgresImport.members(run: try runs.int(row, 0), connection)))
        }
        // A replay's run keeps its links in the metadata (a store made before it has no such table yet).
        if try connection.execute("SELECT to_regclass('\"_ingest_metadata\"') IS NOT NULL")[0, 0] == "t" {
            for index in status.runs.indices {
                let links = try connection.execute("SELECT value FROM \"_ingest_metadata\" WHERE key = $1", [Replay.linksKey(run: status.runs[index].number)])
                guard links.count == 1 else { continue }
                guard let decoded = try? decoder.decode([Replay.Link].self, from: Data(try links.text(0, 0).utf8)) else {
                    throw PostgresError.server("the replay links of run \(status.runs[index].number) in _ingest_metadata are damaged (not the JSON Ingest wrote)", sqlState: .dataCorrupted)
                }
                status.runs[index].replayLinks = decoded
            }
        }
        if let newest = status.runs.last {
            let lease = try decoder.decode(PostgresRunRecord.self, from: Data(try runs.text(runs.count - 1, 2).utf8)).leaseSeconds
            let processes = try connection.execute("""
                SELECT p.id, p.host, p.pid, p.workers, p.state, p.chunks, p.records,
                    extract(epoch from (CASE WHEN p.state = 'running' THEN now() ELSE p.heartbeat END) - p.started),
                    extract(epoch from now() - p.heartbeat),
                    coalesce((SELECT string_agg(c.number::text, ',' ORDER BY c.number) FROM _ingest_chunks c
                              WHERE left(c.owner, length(p.id) + 1) = p.id || '/' AND c.finished IS NULL AND c.lease_until > now()), '')
                FROM _ingest_processes p WHERE p.run = $1 ORDER BY p.started
                """, [String(newest.number)])
            for row in 0..<processes.count {
                let sinceHeartbeat = try processes.double(row, 8)
                status.processes.append(Process(
                    id: try processes.text(row, 0), host: try processes.text(row, 1), pid: try processes.int(row, 2), workers: try processes.int(row, 3),
                    state: try processes.text(row, 4), alive: processes[row, 4] == "running" && sinceHeartbeat < lease,
                    chunks: try processes.int(row, 5), records: try processes.int(row, 6),
                    holding: try processes.text(row, 9).split(separator: ",").compactMap { Int($0) },
                    seconds: try processes.double(row, 7), secondsSinceHeartbeat: sinceHeartbeat))
                let process = status.processes[status.processes.count - 1]
                status.processes[status.processes.count - 1].suspended = process.state == "running" && !process.alive
                    && process.host == ProcessInfo.processInfo.hostName && ProcessState.isStopped(pid: process.pid)
            }
            let rejects = try connection.execute("SELECT record FROM _ingest_rejects WHERE run = $1 ORDER BY chunk, index LIMIT 5",
                                                 [String(newest.number)])
            status.rejects = try (0..<rejects.count).map { try rejects.text($0, 0) }
        }
        let model = try connection.execute("SELECT value FROM _ingest_store WHERE key = 'model'")
        if model.count == 1, let parsed = try? Model.load(json: Data(try model.text(0, 0).utf8)) {
            for entity in parsed.entities {
                let condition = parsed.rowCondition(of: entity.name).map { " WHERE " + $0 } ?? ""
                status.counts[entity.name] = try connection.execute("SELECT count(*) FROM \(parsed.storageTable(of: entity.name))\(condition)").int(0, 0)
            }
        }
        return status
    }
}

extension PostgresStatus {
    /// How far a run is, cheaply (no row counts): for progress lines while it runs.
    package struct Progress: Sendable {
        package var run: Int
        package var recordsDone: Int
        package var records: Int
        package var processesAlive: Int
    }

    /// `run`'s progress (or the newest unfinished run's), or nil when there is none.
    /// - Throws: `PostgresError`.
    package static func progress(run: Int?, _ connection: PostgresConnection) throws -> Progress? {
        let rows = try connection.execute("""
            SELECT r.run, (SELECT coalesce(sum(done), 0) FROM _ingest_chunks c WHERE c.run = r.run),
                (SELECT coalesce(sum(records), 0) FROM _ingest_chunks c WHERE c.run = r.run),
                (SELECT count(*) FROM _ingest_processes p WHERE p.run = r.run AND p.state = 'running'
                    AND p.heartbeat > now() - make_interval(secs => (r.record::json->>'leaseSeconds')::float8))
            FROM _ingest_runs r WHERE ($1::integer IS NULL AND r.state = 'running') OR r.run = $1::integer
            ORDER BY r.run DESC LIMIT 1
            """, [run.map(String.init)])
        guard rows.count == 1 else { return nil }
        return Progress(run: try rows.int(0, 0), recordsDone: try rows.int(0, 1), records: try rows.int(0, 2),
                        processesAlive: try rows.int(0, 3))
    }
}

extension PostgresStatus {
    /// Checks a PostgreSQL store: each run's chunk markers (none past its chunk's records, a
    /// finished chunk complete, a finished run's chunks all finished), the unique index of
    /// each uniqueness constraint, every to-one pointing at a row that exists, and the
    /// history's rows (`PersistentStoreCoordinator.historyProblems()`). Returns
    /// the problems found (none: the store is sound).
    /// - Throws: `PostgresError` when the store cannot be read.
    @_optimize(none)
    package static func check(url: PostgresURL) throws -> [String] {
        let connection = try PostgresConnection(url)
        guard try connection.execute("SELECT to_regclass('_ingest_runs') IS NOT NULL")[0, 0] == "t" else {
            throw PostgresError.notAStore(target: url.description)
        }
        var problems: [String] = []
        let markers = try connection.execute("""
            SELECT c.run, c.number, c.done, c.records, c.finished IS NOT NULL, r.state FROM _ingest_chunks c
            JOIN _ingest_runs r ON r.run = c.run
            WHERE c.done > c.records OR (c.finished IS NOT NULL AND c.done <> c.records)
               OR (r.state = 'finished' AND c.finished IS NULL)
            ORDER BY c.run, c.number LIMIT 20
            """)
        for row in 0..<markers.count {
            problems.append("run \(try markers.text(row, 0)), chunk \(try markers.text(row, 1)): marker at \(try markers.text(row, 2)) of \(try markers.text(row, 3)) records, "
                + (markers[row, 4] == "t" ? "finished" : "not finished") + ", run \(try markers.text(row, 5))")
        }
        let stored = try connection.execute("SELECT value FROM _ingest_store WHERE key = 'model'")
        guard stored.count == 1, let model = try? Model.load(json: Data(try stored.text(0, 0).utf8)) else {
            return problems + ["the store records no readable model"]
        }
        func quote(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
        for entity in model.entities {
            // A subentity's inherited constraints have their index under the entity declaring them.
            for (offset, constraint) in entity.declaredUniquenessConstraints.enumerated() {
                let number = entity.inheritedCounts.uniquenessConstraints + offset
                let index = try connection.execute("SELECT indisunique FROM pg_index WHERE indexrelid = to_regclass($1)",
                                                   [quote("_unique_\(entity.name)_\(number)")])
                if index.count != 1 || index[0, 0] != "t" {
                    problems.append("\(entity.name): the unique index of (\(constraint.joined(separator: ", "))) is missing")
                }
            }
            for relationship in entity.declaredRelationships where !relationship.isToMany {
                let dangling = try connection.execute("""
                    SELECT count(*) FROM \(model.storageTable(of: entity.name)) t WHERE t.\(quote("_" + relationship.name)) IS NOT NULL
                      AND NOT EXISTS (SELECT 1 FROM \(model.storageTable(of: relationship.destination)) d WHERE d."_pk" = t.\(quote("_" + relationship.name)))
                    """)
                if dangling[0, 0] != "0" {
                    problems.append("\(entity.name).\(relationship.name): \(try dangling.text(0, 0)) row(s) point at no \(relationship.destination)")
                }
            }
        }
        return problems + (try PersistentStoreCoordinator.historyProblems(model: model, on: connection))
    }
}
