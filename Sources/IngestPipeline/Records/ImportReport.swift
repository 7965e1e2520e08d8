import Foundation
public import IngestJSON

/// What an import run did; printed at the end and written as JSON beside a SQLite store
/// (`STORE.report.json`). On PostgreSQL it is one process's part in the run: `records` and
/// `rejected` are the run's so far, `imported`, `rejectedThisRun`, `chunks` and `outcomes`
/// this process's, and the fields under PostgreSQL say how the part went.
public struct ImportReport: Sendable, Codable, Equatable {
    public var feed: String
    public var store: String
    /// Records in the feed.
    public var records: Int
    public var feedBytes: Int
    /// Records this run imported (a resumed run counts only its own).
    public var imported: Int
    /// Records this run rejected.
    public var rejectedThisRun: Int
    /// Records rejected so far, by this run and earlier ones: the lines of the rejects file.
    public var rejected: Int
    /// Objects per entity in the store at the end.
    public var counts: [String: Int]
    public var chunks: Int
    public var workers: Int
    public var seconds: Double
    public var recordsPerSecond: Double
    /// Feed bytes this run imported per second.
    public var megabytesPerSecond: Double
    public var peakRSSBytes: Int
    /// Seconds per stage: split is wall time (it overlaps the rest); parse, map and save
    /// are summed over workers; index is the wall time of building the secondary indexes.
    public var stages: StageTimes
    public var rejectsFile: String
    /// The holder named by a lock file this run took over (a run that was killed), if any.
    public var staleLock: String? = nil
    /// Chunk files that had changed or gone since the split, made again from the feed.
    public var remadeChunks: [String] = []
    /// How rows were written: "batch" (`BatchInserter`) or "objects" (contexts and managed objects).
    public var writePath: String?
    /// Records per second of each stage (records over the stage's summed seconds).
    public var stageRates: StageRates?
    /// Records committed (imported or rejected) in each second of the run, per worker:
    /// `timeline[worker][second]`.
    public var timeline: [[Int]]?
    /// What this run's imported records did to the store (see `RecordOutcomes`).
    public var outcomes: RecordOutcomes?
    /// The run's number in the store (1 for the store's first import).
    public var run: Int?
    /// The unfinished run this import left behind (`abandonRun`), if any.
    public var abandonedRun: Int?
    public var chunksDirectory: String?
    /// Chunk files deleted as the run finished; nil when they were kept.
    public var deletedChunks: Int?
    /// The pipeline was inferred from the feed, not written by a user.
    public var pipelineInferred: Bool?
    /// Top-level members beside the records, which the run did not import.
    public var outsideRecords: [String]?
    /// The run's records' members the pipeline does not map, and records that named a
    /// member twice (over the whole run, resumed parts included); nil when there were none.
    public var members: MemberCensus?
    /// Records the batch path captured by the split's member ends, without scanning them
    /// again (`MemberEnds`); the rest were scanned. nil on the object path.
    public var steppedRecords: Int? = nil

    // MARK: - PostgreSQL: one process's part in a run many processes share (nil on SQLite)

    /// This process's ID in the run (`host:pid:tag`, as `_ingest_processes` and status name it).
    public var process: String? = nil
    /// Whether the run has no chunk left (this process or another finished it); false when
    /// other processes go on with it, or it `stopped` here.
    public var runFinished: Bool? = nil
    /// This process stopped at a save boundary because it was asked to (`Importer.cancel()`):
    /// the run goes on from its markers in any process.
    public var stopped: Bool? = nil
    /// Chunk leases lost to other processes (this one stalled past the lease).
    public var leasesLost: Int? = nil
    /// Saves rolled back by the server and tried again.
    public var retries: Int? = nil
    /// Chunks given back before saving in them, to claim a free chunk before them first
    /// (chunks commit in feed order).
    public var chunksGivenBack: Int? = nil
    /// A replay's run: how many rejected records it imported again (`ingest replay`); its
    /// finish removed their old rejects (those rejected again are this run's rejects).
    public var replayed: Int? = nil

    /// Writes the report as pretty JSON to `path` (replacing it whole).
    /// - Throws: `IOError` or an encoding error.
    public func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try FileOps.writeAtomically(Array(try encoder.encode(self)), to: path)
    }

    /// The process's peak resident set size so far, in bytes.
    public static func peakRSS() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss * 1024
    }
}
