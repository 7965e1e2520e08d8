import Foundation
import IngestJSON
import IngestStore

/// The bookkeeping of an object-path save on a PostgreSQL store: inside the save's
/// transaction the chunk's marker moves by compare-and-set (`ChunkLease.advance`), the
/// rejects go to `_ingest_rejects` and the process's counts grow, as the batch path's
/// saves do.
final class LeaseBookkeeping: ChunkBookkeeping {
    let owner: String
    let process: String
    let leaseSeconds: Double
    /// The chunk being imported.
    private var lease: ChunkLease?
    /// Its records committed so far.
    private(set) var done = 0
    private let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    init(owner: String, process: String, leaseSeconds: Double) {
        self.owner = owner
        self.process = process
        self.leaseSeconds = leaseSeconds
    }

    /// Starts on a newly claimed chunk.
    func begin(_ lease: ChunkLease) {
        self.lease = lease
        done = lease.done
    }

    func stage(rejects: [ImportMarker.Reject], _ chunk: ChunkInfo, done: Int, records: Int, in context: ObjectContext) throws {
        guard let lease else { preconditionFailure("a save staged before a chunk was claimed") }
        let texts = try rejects.map { String(decoding: try encoder.encode($0), as: UTF8.self) }
        let indexes = rejects.map(\.index)
        let previous = self.done
        let (owner, process, leaseSeconds) = (self.owner, self.process, self.leaseSeconds)
        context.postgresSaveHook = { connection in
            try lease.advance(from: previous, to: done, owner: owner, leaseSeconds: leaseSeconds, connection)
            for (index, text) in zip(indexes, texts) {
                try connection.execute("INSERT INTO _ingest_rejects VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                                       [String(lease.run), String(lease.number), String(index), text])
            }
            try connection.execute("UPDATE _ingest_processes SET records = records + $2, chunks = chunks + $3, heartbeat = now() WHERE id = $1",
                                   [process, String(records), done >= lease.records ? "1" : "0"])
        }
    }

    func committed(done: Int) { self.done = done }
}
