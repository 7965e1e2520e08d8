#if canImport(Glibc)
import Glibc
#endif

/// Progress on stderr: a bar redrawn in place on a terminal, a plain line every few
/// seconds otherwise (logs, CI), nothing with --quiet.
final class ProgressReporter {
    private let quiet: Bool
    private let label: String
    private let isTerminal = isatty(STDERR_FILENO) != 0
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant
    private var lastDraw: ContinuousClock.Instant
    private var drewBar = false

    init(quiet: Bool, label: String) {
        self.quiet = quiet
        self.label = label
        start = clock.now
        lastDraw = start
    }

    func update(bytes: Int, total: Int?, records: Int) {
        guard !quiet else { return }
        let now = clock.now
        let interval: Duration = isTerminal ? .milliseconds(100) : .seconds(5)
        guard now - lastDraw >= interval else { return }
        lastDraw = now
        let elapsed = max((now - start).seconds, 1e-9)
        let rate = "\(Format.count(Int(Double(records) / elapsed))) records/s, \(Format.rate(Double(bytes) / 1_048_576 / elapsed)) MiB/s"
        var line = "\(label): "
        if let total, total > 0 {
            let fraction = min(1, Double(bytes) / Double(total))
            if isTerminal {
                let width = 30
                let filled = Int(fraction * Double(width))
                line += "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            }
            line += "\(Int(fraction * 100))% \(ByteCount.format(bytes)) of \(ByteCount.format(total)), "
        } else {
            line += "\(ByteCount.format(bytes)), "
        }
        line += "\(Format.records(records)), \(rate)"
        if isTerminal {
            Console.error("\r\u{1B}[K" + line)
            drewBar = true
        } else {
            Console.error(line + "\n")
        }
    }

    func finish() {
        if drewBar { Console.error("\r\u{1B}[K") }
        drewBar = false
    }
}

import IngestJSON
