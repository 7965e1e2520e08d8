import Foundation
import IngestJSON
import IngestStore

/// The bookkeeping of an object-path save on a PostgreSQL store: inside the save's
/// transaction the chunk's marker moves by compare-and-set (`ChunkLease.advance`), the
/// rejects go to `_ingest_rejects` and the process's counts grow, as the batch path's
/// saves do.
final class LeaseBookkeeping: ChunkBookkeeping {
    let run: Int
    let owner: String
    let process: String
    let leaseSeconds: Double
    /// The chunk being imported.
    private var lease: ChunkLease?
    /// Its records committed so far.
    private(set) var done = 0

    init(run: Int, owner: String, process: String, leaseSeconds: Double) {
        self.run = run
        self.owner = owner
        self.process = process
        self.leaseSeconds = leaseSeconds
    }

    func begin(_ chunk: ChunkInfo, done: Int) {
        lease = ChunkLease(run: run, chunk: chunk, done: done)
        self.done = done
    }

    func stage(rejects: [ImportMarker.Reject], members: MemberCensus, outcomes: RecordOutcomes, _ chunk: ChunkInfo, done: Int,
               records: Int, in context: ObjectContext) throws {
        guard let lease else { fatalError("a save staged before a chunk was claimed") }
        let lines = try rejects.map { (index: $0.index, json: try $0.jsonLine()) }
        let previous = self.done
        let (owner, process, leaseSeconds) = (self.owner, self.process, self.leaseSeconds)
        context.postgresSaveHook = { connection in
            try lease.advance(from: previous, to: done, owner: owner, leaseSeconds: leaseSeconds, connection)
            try lease.recordSave(rejects: lines, members: members, records: records, done: done, process: process, connection)
        }
    }

    func committed(done: Int) { self.done = done }
}
