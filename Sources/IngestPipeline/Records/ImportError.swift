/// Why an import cannot start or go on: a kind to switch on, with the place it names, and
/// a message in the library's own terms (the command line adds what to type next).
public struct ImportError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The feed path names no readable file (nothing was recorded in the store).
        case feedUnreadable(path: String, exists: Bool)
        /// The store's unfinished run is of another feed or pipeline.
        case unfinishedRun(store: String, run: Int, feed: String, reasons: [String])
        /// More records were rejected than `Importer.Options.maxRejects` allows (the run is resumable).
        case tooManyRejects(rejected: Int, limit: Int, rejectsFile: String)
        /// A chunk's bytes are not the ones the split wrote.
        case chunkChanged(path: String)
        /// Another process holds the store's import lock.
        case storeBusy(store: String, holder: String)
        /// The file is a store no import has written to.
        case noImport(store: String)
        /// The store's last run imported this very feed (same checksum) with the same
        /// pipeline and finished, and the pipeline writes entities without a uniqueness
        /// key, which importing it again would give their rows twice.
        case alreadyImported(store: String, run: Int, keyless: [String])
        /// Anything else, said in words.
        case other(String)
    }

    public var kind: Kind

    public init(_ kind: Kind) { self.kind = kind }

    /// An error of kind `.other`.
    public init(_ message: String) { kind = .other(message) }

    public var message: String { description }

    public var description: String {
        switch kind {
        case .feedUnreadable(let path, let exists):
            "cannot read the feed \(path): \(exists ? "not a readable file" : "no such file")"
        case .unfinishedRun(let store, let run, let feed, let reasons):
            "\(store) has an unfinished import, run \(run) of \(feed): \(reasons.joined(separator: "; "))"
        case .tooManyRejects(let rejected, let limit, let rejectsFile):
            "stopped: \(rejected) records rejected, more than the limit of \(limit) (see \(rejectsFile))"
        case .chunkChanged(let path):
            "\(path) changed after the split (its checksum is not the manifest's)"
        case .storeBusy(let store, let holder):
            "\(store) is being imported by another process (\(holder))"
        case .noImport(let store):
            "\(store) is an Ingest store, but no import has written to it"
        case .alreadyImported(let store, let run, let keyless):
            "\(store): run \(run) imported this feed (same checksum) with this pipeline and finished; nothing to do "
                + "(\(keyless.joined(separator: ", ")) \(keyless.count == 1 ? "has" : "have") no uniqueness key: importing the feed again would add \(keyless.count == 1 ? "its" : "their") rows again)"
        case .other(let message):
            message
        }
    }
}
