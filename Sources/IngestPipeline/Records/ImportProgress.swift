/// Where a running import stands, as its main context sees it: sent after every save
/// the main context merges, and once more at the end (`isFinal`). On SQLite the split's
/// end is such a save (the run's record takes the chunk count), so an event may come
/// before any record is done: check `recordsThisRun` to act on records.
public struct ImportProgress: Sendable, Equatable {
    /// Chunks in the feed; nil until the split has finished.
    public var chunksTotal: Int?
    /// Chunk files ready so far.
    public var chunksSplit: Int
    /// Chunks whose records are all committed (by this run or an earlier one).
    public var chunksDone: Int
    /// Records committed by this run (imported or rejected).
    public var recordsThisRun: Int
    /// Records rejected, by this run and earlier ones.
    public var rejected: Int
    /// Objects per entity as the main context knows them: the store's counts when the
    /// run began plus what it has merged since. Never ahead of what is committed.
    public var counts: [String: Int]
    /// Seconds since the run began.
    public var elapsed: Double
    public var isFinal: Bool

    public var recordsPerSecond: Double { elapsed > 0 ? Double(recordsThisRun) / elapsed : 0 }
}
