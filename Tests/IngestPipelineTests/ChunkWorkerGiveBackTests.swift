import Dispatch
import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Logging
import Synchronization
import Testing
@testable import IngestPipeline

/// A worker whose writer gives a chunk back (`ChunkYielded`, PostgreSQL's feed order) after
/// its mapping stage found nothing left to claim: the worker must claim that chunk again,
/// or no process of the run would (found by review of a CI failure where a run ended with
/// a chunk unimported and its process exited as if the run went on elsewhere).
@Suite struct ChunkWorkerGiveBackTests {
    /// Chunks in a queue. Chunk 2's first wait for its turn holds until a claim has found the
    /// queue empty, then puts the chunk back and gives it up, as a writer does that finds an
    /// earlier chunk free or held by its own worker.
    final class Source: ChunkSource, Sendable {
        let queue: Mutex<[ClaimedChunk]>
        let foundNone = DispatchSemaphore(value: 0)
        let claims = Atomic<Int>(0)
        let gaveBack = Atomic<Bool>(false)

        init(_ chunks: [ClaimedChunk]) {
            queue = Mutex(chunks)
        }

        func claim(until stop: () -> Bool) throws -> ClaimedChunk? {
            claims.add(1, ordering: .relaxed)
            guard var chunk = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
                foundNone.signal()
                return nil
            }
            if chunk.info.index == 2, !gaveBack.load(ordering: .relaxed) {
                chunk.waitForTurn = { [self, chunk] in
                    // The mapping stage ends first: without the fix nothing claims again.
                    guard foundNone.wait(timeout: .now() + 10) == .success else { return }
                    var back = chunk
                    back.waitForTurn = {}
                    queue.withLock { $0.append(back) }
                    gaveBack.store(true, ordering: .relaxed)
                    throw ChunkYielded()
                }
            }
            return chunk
        }
    }

    /// Saves nothing: counts what each chunk's saves covered. It overlaps mapping, as
    /// PostgreSQL's writer does, so saves run on a writing thread of their own.
    final class Writer: BatchChunkWriter {
        let inserter: BatchInserter
        let saved = Mutex<[Int: Int]>([:])

        init(_ inserter: BatchInserter) { self.inserter = inserter }

        var overlapsMapping: Bool { true }
        var requests: any BatchRequestMaking { inserter }
        func prepare(_ request: BatchInsertRequest) throws -> Int { 0 }

        func save(_ prepared: Int, _ save: ChunkSave) throws -> BatchResult {
            saved.withLock { $0[save.chunk.index, default: 0] += save.done - save.from }
            var result = BatchResult()
            result.records = save.done - save.from
            return result
        }
    }

    static func chunk(_ index: Int, records: Int) -> ClaimedChunk {
        let lines = (0..<records).map { #"{"id":"c\#(index)r\#($0)","title":"t"}"# }
        let bytes = Array((lines.joined(separator: "\n") + "\n").utf8)
        let info = ChunkInfo(index: index, firstRecord: (index - 1) * records, records: records, byteSize: bytes.count,
                             checksum: String(repeating: "0", count: 16))
        return ClaimedChunk(info: info, bytes: bytes, done: 0)
    }

    @Test func aChunkGivenBackAfterTheLastClaimIsClaimedAgainAndSaved() throws {
        let dir = try TemporaryDirectory()
        let spec = RecordMapperTests.spec
        let inserter = BatchInserter(coordinator: try PersistentStoreCoordinator(model: spec.model, path: dir.file("s.sqlite")))
        let rows = try #require(RowMapper(mapper: RecordMapper(spec: spec), inserter: inserter))
        let writer = Writer(inserter)
        let source = Source([Self.chunk(1, records: 3), Self.chunk(2, records: 4)])
        let worker = ChunkWorker(source: source, path: .batch(writer, rows), saveEvery: 10,
                                 metrics: ImportMetrics(store: "test", entity: spec.recordEntity, factory: nil),
                                 afterSave: { _ in }, shouldStop: { false }, logger: Logger(label: "test"))
        try worker.run()
        let gaveBack = source.gaveBack.load(ordering: .relaxed)
        #expect(gaveBack)
        #expect(writer.saved.withLock { $0 } == [1: 3, 2: 4])
        #expect(worker.totals.chunks == 2)
        #expect(worker.totals.yielded == 1)
    }
}
