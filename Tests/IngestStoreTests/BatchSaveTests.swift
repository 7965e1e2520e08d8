import Synchronization
import Testing
@testable import IngestStore

/// `BatchSave`, the one level where a batch save's transaction, retries and
/// record-by-record fallback live for every store, driven by a scripted writer that
/// logs what the core asks of it.
@Suite struct BatchSaveTests {
    /// A failure the script throws: about a record's data, or a lost transaction.
    struct Failure: Error, Equatable {
        var aboutData = false
        var conflict = false
    }

    /// A writer whose rows "fail" as its script says, logging each call.
    final class ScriptedWriter: BatchWriting {
        struct Prepared: Sendable { let request: BatchInsertRequest }
        var log: [String] = []
        /// Transactions to fail with a conflict before one succeeds.
        var conflicts = 0
        /// Records whose write fails as about data (a whole-batch write fails if it holds one).
        var badRecords: Set<Int> = []

        func entityIndex(_ entity: String) -> Int? { nil }
        func toOneIndex(_ relationship: String, of entity: Int) -> Int? { nil }
        func makeRequest(text: [UInt8]) -> BatchInsertRequest { BatchInsertRequest(plans: [], text: text) }
        func prepare(_ request: BatchInsertRequest) -> Prepared { Prepared(request: request) }
        func request(of prepared: Prepared) -> BatchInsertRequest { prepared.request }

        func inTransaction<T>(_ body: () throws -> T) throws -> T {
            log.append("begin")
            do {
                let value = try body()
                if conflicts > 0 {
                    conflicts -= 1
                    throw Failure(conflict: true)
                }
                log.append("commit")
                return value
            } catch {
                log.append("rollback")
                throw error
            }
        }

        func behindSavepoint<T>(_ body: () throws -> T) throws -> T {
            do { return try body() } catch {
                log.append("rollback to savepoint")
                throw error
            }
        }

        func writeRows(_ prepared: Prepared, only: [Int]?) throws -> BatchResult {
            let records = only ?? Array(0..<prepared.request.recordCount)
            log.append("write " + records.map(String.init).joined(separator: ","))
            if !badRecords.isDisjoint(with: records) { throw Failure(aboutData: true) }
            var result = BatchResult()
            result.records = records.count
            result.inserted["Photo"] = records.count
            return result
        }

        func finish(_ result: BatchResult, metadata: [String: String], author: String) throws {
            log.append("finish \(result.records) by \(author) with \(metadata.keys.sorted())")
        }

        func didCommit() { log.append("didCommit") }
        func didRollBack() { log.append("didRollBack") }
        func isAboutData(_ error: any Error) -> Bool { (error as? Failure)?.aboutData == true }
        func isTransactionConflict(_ error: any Error) -> Bool { (error as? Failure)?.conflict == true }
    }

    static func request(records: Int) -> BatchInsertRequest {
        var request = BatchInsertRequest(plans: [], text: [])
        for number in 0..<records { request.beginRecord(number: 100 + number) }
        return request
    }

    @Test func aSaveWritesBeforeTheRowsAfterThenFinishesInOneTransaction() throws {
        let writer = ScriptedWriter()
        let result = try BatchSave(writer).run(writer.prepare(Self.request(records: 3)), author: "test",
                                               before: { writer.log.append("before") },
                                               after: { result in
                                                   writer.log.append("after \(result.records)")
                                                   return ["marker": "3"]
                                               })
        #expect(writer.log == ["begin", "before", "write 0,1,2", "after 3", "finish 3 by test with [\"marker\"]", "commit", "didCommit"])
        #expect(result.records == 3 && result.retries == 0 && result.rejected.isEmpty)
    }

    @Test func aTransactionThatLosesToAnotherIsRunAgainWholeAndCountsItsRetries() throws {
        let writer = ScriptedWriter()
        writer.conflicts = 2
        let result = try BatchSave(writer).run(writer.prepare(Self.request(records: 2)), author: "test")
        let once = ["begin", "write 0,1", "finish 2 by test with []"]
        #expect(writer.log == once + ["rollback", "didRollBack"] + once + ["rollback", "didRollBack"] + once + ["commit", "didCommit"])
        #expect(result.retries == 2 && result.records == 2)
    }

    @Test func aConflictPastTheAttemptsIsThrownAndNothingCommits() throws {
        let writer = ScriptedWriter()
        writer.conflicts = 5
        var save = BatchSave(writer)
        save.attempts = 3
        let retries = Mutex<[Int]>([])
        save.onRetry = { attempt, _ in retries.withLock { $0.append(attempt) } }
        #expect(throws: Failure(conflict: true)) { try save.run(writer.prepare(Self.request(records: 1)), author: "test") }
        #expect(!writer.log.contains("commit") && writer.log.filter { $0 == "didRollBack" }.count == 3)
        #expect(retries.withLock { $0 } == [1, 2])
    }

    @Test func aBatchRefusedForOneRecordsDataIsWrittenRecordByRecordRejectingOnlyThatRecord() throws {
        let writer = ScriptedWriter()
        writer.badRecords = [1]
        let fellBack = Mutex(0)
        var save = BatchSave(writer)
        save.onRecordByRecord = { _ in fellBack.withLock { $0 += 1 } }
        let result = try save.run(writer.prepare(Self.request(records: 3)), author: "test")
        #expect(writer.log == ["begin", "write 0,1,2", "rollback to savepoint", "write 0", "write 1", "rollback to savepoint", "write 2",
                               "finish 2 by test with []", "commit", "didCommit"])
        #expect(result.records == 2 && result.inserted == ["Photo": 2])
        #expect(result.rejected.map(\.record) == [101])
        #expect(result.rejected.first?.reason == "\(Failure(aboutData: true))")
        #expect(fellBack.withLock { $0 } == 1)
    }

    @Test func aFailureOfTheStoreIsThrownWithoutRetryOrFallback() throws {
        struct Broken: Error {}
        let writer = ScriptedWriter()
        #expect(throws: Broken.self) {
            try BatchSave(writer).run(writer.prepare(Self.request(records: 2)), author: "test", after: { _ in throw Broken() })
        }
        #expect(writer.log == ["begin", "write 0,1", "rollback", "didRollBack"])
    }
}
