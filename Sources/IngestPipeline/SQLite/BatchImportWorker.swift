#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestJSON
import Logging
import IngestStore

/// One worker on the batch path: reads a whole chunk, checks its checksum, finds
/// records by newline (the split wrote one per line and validated each), maps each
/// straight into rows (`RowMapper`), and every K records has its `BatchInserter` write
/// the rows with the chunk's marker and the batch's rejects in one transaction.
/// Parsing, mapping and key lookups happen before the write lock is taken.
final class BatchImportWorker: ChunkImporting {
    let rows: RowMapper
    let inserter: BatchInserter
    private(set) var times = StageTimes()

    let keys: ImportMarker.Keys
    var logger = Logger(label: "ingest.import", factory: { _ in SwiftLogNoOpLogHandler() })

    init(rows: RowMapper, inserter: BatchInserter, keys: ImportMarker.Keys) {
        self.rows = rows
        self.keys = keys
        self.inserter = inserter
    }

    func importChunk(_ chunk: ChunkInfo, directory: String, skip: Int, saveEvery: Int, verified: Bool,
                     waitForTurn: () throws -> Void, afterSave: (ImportWorker.ChunkResult) throws -> Void) throws {
        let path = directory + "/" + chunk.file
        let started = StageTimes.now()
        let bytes = try FileOps.readFile(path)
        guard verified || bytes.withUnsafeBytes({ Checksum.hex(of: $0) }) == chunk.checksum else {
            throw ImportError(.chunkChanged(path: path))
        }
        times.parse += StageTimes.now() - started
        var request = inserter.makeRequest(text: bytes)
        var rejects: [String: String] = [:]
        var sinceSave = 0
        // The whole chunk is mapped before its first save: saves wait for earlier chunks.
        var batches: [(request: BatchInsertRequest, rejects: [String: String], done: Int)] = []

        func flush(done: Int) {
            batches.append((request, rejects, done))
            request = inserter.makeRequest(text: bytes)
            rejects.removeAll(keepingCapacity: true)
            sinceSave = 0
        }

        func save(_ request: BatchInserter.Prepared, _ rejects: [String: String], done: Int) throws {
            let started = StageTimes.now()
            var metadata = rejects
            metadata[keys.chunkKey(chunk.index)] = String(done)
            let result = try inserter.execute(request, metadata: metadata) { [self] rejection in
                try entry(chunk, rejection.record, rejection.reason, text: ChunkLines.text(ofRecord: rejection.record, in: bytes))
            }
            times.save += StageTimes.now() - started
            times.locked += result.lockedSeconds
            let outcomes = RecordOutcomes(inserted: result.records - result.updated - result.unchanged, updated: result.updated,
                                          unchanged: result.unchanged, duplicates: result.duplicates)
            for rejection in result.rejected {
                logger.trace("record rejected at save", metadata: ["chunk": "\(chunk.index)", "index": "\(rejection.record)", "reason": "\(rejection.reason)"])
            }
            try afterSave(ImportWorker.ChunkResult(imported: result.records, rejected: rejects.count + result.rejected.count, outcomes: outcomes,
                                                   seconds: StageTimes.now() - started, lockedSeconds: result.lockedSeconds))
        }

        var mapping = 0.0
        var index = skip
        var reason: String?
        try ChunkLines.forEach(in: bytes, from: skip) { range, number in
            index = number + 1
            let mapped = StageTimes.now()
            try rows.add(record: range, number: number, to: &request, reason: &reason)
            if let reason {
                logger.trace("record rejected", metadata: ["chunk": "\(chunk.index)", "index": "\(number)", "reason": "\(reason)"])
                rejects.merge(try entry(chunk, number, reason, text: String(decoding: bytes[range], as: UTF8.self))) { $1 }
            }
            mapping += StageTimes.now() - mapped
            sinceSave += 1
            if sinceSave == saveEvery {
                times.map += mapping
                mapping = 0
                flush(done: number + 1)
            }
        }
        times.map += mapping
        if sinceSave > 0 || (skip == 0 && index == 0) { flush(done: index) }
        // Key lookups before the wait: they overlap the writes of the chunks before this one.
        let preparing = StageTimes.now()
        let prepared = try batches.map { try inserter.prepare($0.request) }
        times.save += StageTimes.now() - preparing
        logger.debug("keys looked up", metadata: ["chunk": "\(chunk.index)", "batches": "\(batches.count)",
                                                  "ms": "\(Int((StageTimes.now() - preparing) * 1000))"])
        let waiting = StageTimes.now()
        try waitForTurn()
        times.waiting += StageTimes.now() - waiting
        for (batch, request) in zip(batches, prepared) { try save(request, batch.rejects, done: batch.done) }
    }

    /// The metadata entry of a rejected record, as the object path stages it.
    private func entry(_ chunk: ChunkInfo, _ index: Int, _ reason: String, text: String) throws -> [String: String] {
        let reject = ImportMarker.Reject(chunk, index: index, reason: reason, text: text)
        return [keys.rejectKey(chunk: chunk.index, index: index): try reject.jsonLine()]
    }
}
