/// PostgreSQL's half of `BatchSave`: transactions and savepoints on the writer's own
/// connection, and the history and metadata a save ends with.
extension PostgresBatchWriter {
    /// A request and its keys' slots (`stage`); the write looks keys up inside its transaction.
    package struct Prepared: Sendable {
        let request: BatchInsertRequest
        let staged: Staged
    }

    /// Works out the request's key slots: on a worker's mapping thread, while this
    /// writer's connection writes the batch before (staging reads nothing a write changes).
    package func prepare(_ request: BatchInsertRequest) -> Prepared {
        Prepared(request: request, staged: stage(request))
    }

    package func request(of prepared: Prepared) -> BatchInsertRequest { prepared.request }

    package func inTransaction<T>(_ body: () throws -> T) throws -> T {
        // Sent with the save's first statement (`PostgresConnection.enqueue`), and so are the
        // savepoint's statements below.
        connection.enqueue("BEGIN")
        do {
            let value = try body()
            try connection.execute("COMMIT")
            return value
        } catch {
            _ = try? connection.rollback()
            throw error
        }
    }

    package func behindSavepoint<T>(_ body: () throws -> T) throws -> T {
        connection.enqueue("SAVEPOINT batch")
        do {
            let value = try body()
            // Its failure is thrown by the save's next statement, in the transaction's catch.
            connection.enqueue("RELEASE SAVEPOINT batch")
            return value
        } catch {
            // A connection lost or a transaction already aborted by the failure is the outer error's to report.
            _ = try? connection.rollback(toSavepoint: "batch")
            _ = try? connection.execute("RELEASE SAVEPOINT batch")
            throw error
        }
    }

    /// The rows of the request, or of its records `only`, each record's slots staged again then.
    package func writeRows(_ prepared: Prepared, only: [Int]?) throws -> BatchResult {
        try write(prepared.request, only: only, staged: only == nil ? prepared.staged : nil)
    }

    package func finish(_ result: BatchResult, metadata: [String: String], author: String) throws {
        if logsHistory { try recordHistory(of: result, author: author) }
        if !metadata.isEmpty { try PersistentStoreCoordinator.writeMetadata(metadata, on: StoreConnection(kind: .postgres(connection))) }
    }

    package func isAboutData(_ error: any Error) -> Bool {
        (error as? PostgresError)?.isAboutData ?? (error as? StoreError)?.isAboutData ?? false
    }

    package func isTransactionConflict(_ error: any Error) -> Bool {
        (error as? PostgresError)?.isTransactionConflict ?? (error as? StoreError)?.isTransactionConflict ?? false
    }
}
