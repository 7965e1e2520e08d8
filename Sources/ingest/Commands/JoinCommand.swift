import ArgumentParser
import Foundation
import IngestJSON
import IngestPipeline
import IngestStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension Ingest {
    struct Join: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Join the running import of a PostgreSQL store: claim its chunks and import them, from any machine.",
            discussion: """
            `ingest import FEED --store postgresql://…` splits a feed into chunks kept in the \
            database and starts importing them; any number of `ingest join` processes, on this \
            machine or others that reach the database, import the same run beside it. A worker \
            claims a chunk with SELECT … FOR UPDATE SKIP LOCKED and holds it with a heartbeat: \
            the chunks of a process that dies go back to the pool when its lease ends, and go on \
            from their markers. Exits when no chunk is left. Exit statuses as for ingest import.

            Example:
              ingest join postgresql://ingest@db.example.com/photos --workers 4
            """
        )

        @Argument(help: ArgumentHelp("The store: a PostgreSQL URL (libpq's; PG* variables and ~/.pgpass apply).", valueName: "url"))
        var store: String

        @Option(name: .customLong("run"), help: "The run to join (default: the newest unfinished one).")
        var runNumber: Int?

        @OptionGroup var running: RunOptions

        func validate() throws {
            guard PostgresURL.isPostgres(store) else {
                throw ValidationError("join works on PostgreSQL stores (postgresql://…); to continue an import into \(store), run ingest resume \(store)")
            }
        }

        func run() throws {
            let url = try PostgresURL(store)
            try PostgresCLI.join(url: url, run: runNumber, running: running)
        }
    }
}

/// The commands' work on PostgreSQL stores.
enum PostgresCLI {
    /// `ingest import FEED --store postgresql://…`: registers the run, then imports as one of its processes.
    static func importFeed(_ feed: String, pipeline: [UInt8], url: PostgresURL, running: RunOptions, saveEvery: Int?,
                           chunkSize: Int?, abandonRun: Bool, leaseSeconds: Double?, again: Bool = false) throws {
        var options = PostgresImportOptions(workers: running.workers, saveEvery: saveEvery, chunkSize: chunkSize,
                                            leaseSeconds: leaseSeconds ?? 30, abandonRun: abandonRun,
                                            logger: try StderrLogHandler.logger(running.logLevel))
        options.again = again
        let started: PostgresImport.Started
        do {
            started = try PostgresImport.start(feed: feed, pipeline: pipeline, url: url, options: options, splitAlongside: true)
        } catch let error as ImportError where { if case .alreadyImported = error.kind { true } else { false } }() {
            if !running.quiet { print(Advice.message(error)) }
            return
        }
        defer { if let directory = started.chunksDirectory { try? FileManager.default.removeItem(atPath: directory) } }
        if !running.quiet {
            if started.registered {
                Console.error("ingest: \(url): run \(started.run) registered; its chunks are stored in the database as the split makes them, and imported meanwhile; other machines join with: ingest join \(url)\n")
            } else {
                Console.error("ingest: \(url): continuing its unfinished run \(started.run) of this feed\n")
            }
        }
        var split: (@Sendable (SplitCancellation) throws -> PostgresImport.Split)?
        if started.needsSplit, let directory = started.chunksDirectory {
            let (run, options) = (started.run, options)
            split = { cancellation in
                try PostgresImport.split(feed: feed, run: run, url: url, directory: directory, options: options, cancellation: cancellation)
            }
        }
        try join(url: url, run: started.run, running: running, localChunks: started.chunksDirectory, split: split)
    }

    /// Runs this process's part of the import, stopping at a save boundary on SIGINT/SIGTERM/SIGHUP.
    /// `split`, when given, runs beside the workers (see `PostgresImport.split`): its failure
    /// stops them, and is the command's error.
    static func join(url: PostgresURL, run: Int?, running: RunOptions, localChunks: String? = nil,
                     split: (@Sendable (SplitCancellation) throws -> PostgresImport.Split)? = nil) throws {
        if running.maxRejects != nil {
            throw CommandFailure("--max-rejects works on SQLite stores only for now; a PostgreSQL run imports every record it can and keeps the rest in _ingest_rejects")
        }
        var options = PostgresImportOptions(workers: running.workers, logger: try StderrLogHandler.logger(running.logLevel))
        options.localChunks = localChunks
        let join = PostgresJoin(url: url, options: options)
        let splitCancellation = SplitCancellation()
        let signals = StopSignals {
            join.cancellation.store(true, ordering: .relaxed)
            splitCancellation.cancel()
        }
        defer { signals.cancel() }
        let splitOutcome = Mutex<Result<PostgresImport.Split, any Error>?>(nil)
        let splitDone = DispatchSemaphore(value: 0)
        if let split {
            Thread.detachNewThread {
                defer { splitDone.signal() }
                let outcome = Result { try split(splitCancellation) }
                splitOutcome.withLock { $0 = outcome }
                // A split that failed leaves nothing more to import: the workers stop at their next save.
                if case .failure = outcome { join.cancellation.store(true, ordering: .relaxed) }
            }
        } else {
            splitDone.signal()
        }
        // The split's failure (not a stop a signal asked for) is the command's error.
        func splitFailure() -> (any Error)? {
            splitDone.wait()
            splitDone.signal()
            guard case .failure(let error)? = splitOutcome.withLock({ $0 }) else { return nil }
            if case SplitError.interrupted = error, splitCancellation.isCancelled { return nil }
            if let lost = error as? PostgresError, lost.isConnectionLoss {
                return CommandFailure("\(url): \(lost); the run is kept as far as it was saved: continue with: ingest join \(url)")
            }
            return error
        }
        let report: PostgresJoin.Report
        let progress = PostgresProgressLine(url: url, run: run, quiet: running.quiet)
        do {
            defer { progress.stop() }
            report = try join.run(run: run)
        } catch let error where splitFailure() != nil {
            _ = error
            throw splitFailure()!
        } catch let error as ImportError where error.kind == .noImport(store: url.description) {
            let status = try PostgresStatus.read(url: url)
            let last = status.runs.last.map { "its last import, run \($0.number), is \($0.state)" } ?? "no import has started"
            if !running.quiet { print("\(url): nothing to join: \(last)") }
            return
        } catch let error as PostgresError where error.isConnectionLoss {
            // The saves that committed are kept; the run goes on from its markers.
            throw CommandFailure("\(url): \(error); the run is kept as far as it was saved: continue with: ingest join \(url)")
        } catch StoreError.postgres(let error) where error.isConnectionLoss {
            throw CommandFailure("\(url): \(error); the run is kept as far as it was saved: continue with: ingest join \(url)")
        }
        if !running.quiet {
            print("\(url): run \(report.run): this process (\(report.process), \(report.workers) worker(s)) imported \(Format.count(report.records)) records in \(report.chunks) chunk(s) and rejected \(Format.count(report.rejected)) in \(Format.seconds(report.seconds)) (\(Format.count(Int(Double(report.records) / max(report.seconds, 0.001)))) records/s)")
            print("  " + Ingest.Import.outcomesLine(report.outcomes))
            if report.leasesLost > 0 { print("  lost \(report.leasesLost) chunk lease(s) to other processes (this one stalled past the lease)") }
            print(report.runFinished
                  ? "  run \(report.run) finished: \(Format.count(report.runRecords)) records done, \(Format.count(report.runRejected)) rejected in all (ingest status \(url) lists them)"
                  : "  run \(report.run) goes on in other processes: \(Format.count(report.runRecords)) records done so far")
        }
        if let failure = splitFailure() { throw failure }
        if report.stopped { signals.exit(continueWith: "ingest join \(url)") }
        if report.rejected > 0 { throw ExitCode(3) }
    }
}

extension PostgresCLI {
    static func printStatus(_ status: PostgresStatus) {
        let unfinished = status.runs.contains { $0.state == "running" }
        guard !status.runs.isEmpty else {
            print("\(status.store): no import has run yet (0 runs)")
            return
        }
        print("\(status.store): \(unfinished ? "import not finished" : "import finished") (\(status.runs.count) run(s))")
        print("  " + status.counts.sorted { $0.key < $1.key }.map { "\($0.key): \(Format.count($0.value))" }.joined(separator: ", "))
        for run in status.runs {
            let state = switch (run.state, run.liveProcesses) {
            case ("running", 0): "interrupted (no process is importing it; continue with: ingest join \(status.store))"
            case ("running", let live): "running (\(live) process\(live == 1 ? "" : "es") importing it)"
            default: run.state
            }
            print("  run \(run.number): \(state), started \(run.started)" + (run.ended.map { ", ended \($0)" } ?? ""))
            print("    chunks: \(run.chunksFinished) of \(run.chunkCount) complete, \(run.chunksHeld) held now; records done: \(Format.count(run.recordsDone)) of \(Format.count(run.records)); rejected: \(Format.count(run.rejected))")
            print("    feed: \(run.feed)")
        }
        guard let newest = status.runs.last else { return }
        print("  processes of run \(newest.number):")
        let rows = status.processes.map { process in
            [process.id, process.alive ? "alive" : (process.state == "running" ? "dead (no heartbeat for \(Format.seconds(process.secondsSinceHeartbeat)))" : process.state),
             String(process.workers), String(process.chunks), Format.count(process.records),
             Format.count(Int(process.recordsPerSecond)), process.holding.map(String.init).joined(separator: ",")]
        }
        if rows.isEmpty { print("    none yet") } else {
            let table = Table.render(header: ["process", "state", "workers", "chunks", "records", "records/s", "holding"], rows: rows)
            print(table.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n"))
        }
        if !status.rejects.isEmpty {
            print("  first rejects of run \(newest.number) (SELECT record FROM _ingest_rejects WHERE run = \(newest.number) lists them all):")
            status.rejects.forEach { print("    " + $0) }
        }
    }
}

/// A progress line for an import on PostgreSQL, from the store (so it counts every
/// process): redrawn on a terminal twice a second, a plain line every 5 s otherwise.
final class PostgresProgressLine: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(url: PostgresURL, run: Int?, quiet: Bool) {
        guard !quiet else {
            done.signal()
            return
        }
        Thread.detachNewThread { [self] in
            defer { done.signal() }
            let terminal = isatty(STDERR_FILENO) != 0
            let interval = terminal ? 0.5 : 5.0
            guard let connection = try? PostgresConnection(url) else { return }
            var last: (time: ContinuousClock.Instant, done: Int)?
            var next = ContinuousClock.now + .seconds(interval)
            var drew = false
            while !stopped.load(ordering: .relaxed) {
                Thread.sleep(forTimeInterval: 0.05)
                guard ContinuousClock.now >= next else { continue }
                next = ContinuousClock.now + .seconds(interval)
                guard let progress = try? PostgresStatus.progress(run: run, connection) else { continue }
                let now = ContinuousClock.now
                let rate = last.map { Double(progress.recordsDone - $0.done) / max((now - $0.time).seconds, 1e-3) }
                last = (now, progress.recordsDone)
                let percent = progress.records > 0 ? 100 * progress.recordsDone / progress.records : 100
                let line = "run \(progress.run): \(Format.count(progress.recordsDone)) of \(Format.count(progress.records)) records (\(percent)%), "
                    + "\(progress.processesAlive) process(es)" + (rate.map { ", \(Format.count(Int($0))) records/s" } ?? "")
                if terminal {
                    Console.error("\r\u{1B}[K" + line)
                    drew = true
                } else {
                    Console.error("ingest: " + line + "\n")
                }
            }
            if drew { Console.error("\r\u{1B}[K") }
        }
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        done.wait()
    }
}
