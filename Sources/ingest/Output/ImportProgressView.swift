import IngestPipeline
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The live view of an import on stderr: one line redrawn in place on a terminal, a
/// plain line every few seconds otherwise. Counts are the run's main context's.
final class ImportProgressView: Sendable {
    private let isTerminal = isatty(STDERR_FILENO) != 0
    private let state = Mutex<(lastDraw: Double, drewLine: Bool)>((0, false))

    func show(_ progress: ImportProgress) {
        let interval = isTerminal ? 0.2 : 5.0
        let draw = state.withLock { state -> Bool in
            guard !progress.isFinal, progress.elapsed - state.lastDraw >= interval else { return false }
            state.lastDraw = progress.elapsed
            state.drewLine = isTerminal
            return true
        }
        guard draw else { return }
        let chunks = progress.chunksTotal.map { "\(progress.chunksDone)/\($0)" } ?? "\(progress.chunksDone)/\(progress.chunksSplit)+ (splitting)"
        let counts = progress.counts.sorted { $0.key < $1.key }.map { "\($0.key) \(Format.count($0.value))" }.joined(separator: ", ")
        let line = "import: chunks \(chunks), \(Format.records(progress.recordsThisRun)), "
            + "\(Format.count(Int(progress.recordsPerSecond))) records/s, \(Format.count(progress.rejected)) rejected; \(counts)"
        Console.error(isTerminal ? "\r\u{1B}[K" + line : line + "\n")
    }

    func finish() {
        if state.withLock({ $0.drewLine }) { Console.error("\r\u{1B}[K") }
    }
}
