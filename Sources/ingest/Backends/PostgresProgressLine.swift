import ArgumentParser
import Foundation
import IngestJSON
import IngestPipeline
import IngestStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A progress line for an import on PostgreSQL, from the store (so it counts every
/// process): redrawn on a terminal twice a second, a plain line every 5 s otherwise.
final class PostgresProgressLine: Sendable {
    private let thread = ManagedThread(name: "ingest.progress")
    private let url: PostgresURL
    private let run: Int?

    /// Shows the progress of `run` (the newest when nil) once started.
    init(url: PostgresURL, run: Int?) {
        (self.url, self.run) = (url, run)
    }

    /// Starts drawing on the line's thread.
    func start() {
        let (url, run) = (url, run)
        thread.start { stop in
            let terminal = isatty(STDERR_FILENO) != 0
            let interval = terminal ? 0.5 : 5.0
            guard let connection = try? PostgresConnection(url) else { return }
            var last: (time: ContinuousClock.Instant, done: Int)?
            var next = ContinuousClock.now + .seconds(interval)
            var drew = false
            while !stop.wait(seconds: max(0, (next - ContinuousClock.now).seconds)) {
                guard ContinuousClock.now >= next else { continue }
                next = ContinuousClock.now + .seconds(interval)
                guard let progress = try? PostgresStatus.progress(run: run, connection) else { continue }
                let now = ContinuousClock.now
                let rate = last.map { Double(progress.recordsDone - $0.done) / max((now - $0.time).seconds, 1e-3) }
                last = (now, progress.recordsDone)
                let percent = progress.records > 0 ? 100 * progress.recordsDone / progress.records : 100
                let line = "run \(progress.run): \(Format.count(progress.recordsDone)) of \(Format.records(progress.records)) (\(percent)%), "
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
        thread.stop()
    }
}
