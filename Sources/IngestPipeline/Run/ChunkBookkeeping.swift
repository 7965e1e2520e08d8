import IngestJSON
import IngestStore

/// Where an object-path worker's saves record how far a chunk is done and which of its
/// records were rejected: always inside the save's own transaction, so the rows and
/// the marker commit together or not at all.
protocol ChunkBookkeeping: AnyObject {
    /// The run the saves belong to (history names it as their author).
    var run: Int { get }
    /// Starts on a chunk claimed with `done` of its records done.
    func begin(_ chunk: ChunkInfo, done: Int)
    /// Stages the chunk's marker (`done` records), `rejects` and the census of the members
    /// the pipeline does not map with the next save of `context`; `records` is how many
    /// records (imported or rejected) that save completes.
    func stage(rejects: [ImportMarker.Reject], members: MemberCensus, outcomes: RecordOutcomes, _ chunk: ChunkInfo, done: Int,
               records: Int, in context: ObjectContext) throws
    /// The staged save committed.
    func committed(done: Int)
}
