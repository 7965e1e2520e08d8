import IngestJSON

/// Whether an import begins a new run, continues the store's unfinished run, or is
/// refused: one set of rules for both stores, over what each store recorded of its runs
/// (`ImportMarker.Run` on SQLite, `PostgresRunRecord` on PostgreSQL).
struct RunAdmission {
    /// A run as its store recorded it, in the terms the rules need.
    struct Recorded {
        var number: Int
        var feedByteSize: Int
        /// The split feed's checksum; nil or empty before its split finished.
        var feedChecksum: String?
        var pipelineSHA256: String
        /// The chunk size the run was split with, where a new import may ask for another.
        var chunkSize: Int?
    }

    /// The feed's path ("-" for standard input) and size (`readOnceSize` for a feed read once).
    let feed: String
    let feedSize: Int
    let pipelineSHA256: String
    /// Entities without a key: their rows would be made twice by the same feed again.
    let keylessEntities: [String]
    /// The chunk size asked for (a continuing import that asked for none takes its run's).
    var chunkSize: Int
    /// Import the feed even when the last run imported it with the same pipeline.
    let again: Bool

    /// Read once, or over HTTP: not hashed here (the split compares its chunks with the feed's).
    var isReadOnce: Bool { FileOps.isReadOnce(feed) || HTTPByteSource.isURL(feed) }

    /// The same feed and pipeline as the finished last run: keyed entities would not change
    /// (the run would say so), but entities without a key would get their rows twice.
    /// - Throws: `ImportError.alreadyImported` then; `IOError` when the feed cannot be hashed.
    func checkNotImported(_ last: Recorded, store: String) throws {
        guard !again, !keylessEntities.isEmpty, !isReadOnce, last.pipelineSHA256 == pipelineSHA256,
              last.feedByteSize == feedSize, let sum = last.feedChecksum, !sum.isEmpty,
              try Splitter.fullHash(feed) == sum else { return }
        throw ImportError(.alreadyImported(store: store, run: last.number, keyless: keylessEntities))
    }

    /// Why the store's unfinished run cannot be continued by this import (none when it can).
    /// `splitWillCompare`: the run's split, finished or resumed, compares the feed with
    /// its chunks itself; otherwise a feed whose split finished is hashed here, so that a
    /// feed changed in place (same size) is refused before anything of it is imported.
    /// - Throws: `IOError` when the feed cannot be hashed.
    func reasons(continuing run: Recorded, splitWillCompare: Bool) throws -> [String] {
        var reasons: [String] = []
        if run.feedByteSize != feedSize { reasons.append("the feed differs (\(run.feedByteSize) bytes then, \(feedSize) now)") }
        if run.pipelineSHA256 != pipelineSHA256 { reasons.append("the pipeline differs") }
        if let recorded = run.chunkSize, recorded != chunkSize {
            reasons.append("the chunk size differs (\(recorded) then, \(chunkSize) now)")
        }
        if reasons.isEmpty, !splitWillCompare, !isReadOnce, let sum = run.feedChecksum, !sum.isEmpty,
           try Splitter.fullHash(feed) != sum {
            reasons.append("the feed differs (same size, other content)")
        }
        return reasons
    }
}
