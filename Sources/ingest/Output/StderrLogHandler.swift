import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Log lines on standard error, one per event: `2026-11-23T15:52:34Z debug saved chunk=3 records=1000`.
/// On a terminal a line first clears the progress view's line, which redraws itself at
/// its next update, so logs and progress never share a line.
struct StderrLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    private static let isTerminal = isatty(STDERR_FILENO) != 0

    init(level: Logger.Level) { logLevel = level }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.sorted { $0.key < $1.key }.map { key, value in
            let text = "\(value)"
            return key.replacingOccurrences(of: " ", with: "_") + "=" + (text.contains(" ") ? "\"\(text)\"" : text)
        }
        let line = ([Date.now.ISO8601Format(), event.level.rawValue, "\(event.message)"] + fields).joined(separator: " ")
        Console.error((Self.isTerminal ? "\r\u{1B}[K" : "") + line + "\n")
    }

    /// The level `--log-level` names, else `INGEST_LOG_LEVEL`'s, else `warning`.
    static func level(_ option: String?) throws -> Logger.Level {
        let text = option ?? ProcessInfo.processInfo.environment["INGEST_LOG_LEVEL"] ?? "warning"
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw CommandFailure("unknown log level '\(text)' (expected trace, debug, info, notice, warning, error or critical)")
        }
        return level
    }

    static func logger(_ option: String?) throws -> Logger {
        let level = try level(option)
        return Logger(label: "ingest") { _ in StderrLogHandler(level: level) }
    }
}
