import Foundation
import IngestStore
import Logging
import Synchronization

/// The chunk directory of the process that keeps a PostgreSQL run's chunks
/// (`PostgresRunRecord.splitDirectory`), as a joined process reads it: on the same machine,
/// or on a file system both see, the kept chunks are claimed and read from their files, so
/// nothing is compressed, stored and fetched for this process. Each file is checked
/// against the checksum the split registered; at the first one missing or different (a
/// directory of the same name on another machine, a split made again there) the process
/// says so in its row (`reads_kept`), and the importing process stores chunks for it.
final class KeptChunkFiles: Sendable {
    let directory: String
    let process: String
    private let reading = Atomic<Bool>(true)
    /// When each chunk's file was first found missing: a split made again there may not have
    /// written it yet.
    private let missing = Mutex<[Int: Double]>([:])
    /// How long a file may be missing before the directory counts as not this run's.
    static let patience = 5.0
    private let logger: Logger

    /// Nil when `directory` is not there to read.
    init?(directory: String, process: String, logger: Logger) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue,
              FileManager.default.isReadableFile(atPath: directory) else { return nil }
        (self.directory, self.process, self.logger) = (directory, process, logger)
    }

    /// Whether this process still reads the kept chunks from their files.
    var isReading: Bool { reading.load(ordering: .relaxed) }

    /// Chunk `number` was not in `file` as registered: reading stops at once when the file is
    /// there with other bytes, or once it has been missing for `patience` seconds.
    func missed(_ number: Int, file: String, _ connection: PostgresConnection) throws {
        if FileManager.default.fileExists(atPath: file) { return try stopReading(after: number, connection) }
        let now = Date().timeIntervalSince1970
        let since = missing.withLock { seen -> Double in
            if let first = seen[number] { return first }
            seen[number] = now
            return now
        }
        if now - since > Self.patience { try stopReading(after: number, connection) }
    }

    /// Stops reading the files: chunk `number` was not in its file as registered.
    func stopReading(after number: Int, _ connection: PostgresConnection) throws {
        guard reading.exchange(false, ordering: .relaxed) else { return }
        logger.notice("the importing process's chunk files cannot be read here as it wrote them; asking it to store its chunks instead",
                      metadata: ["directory": "\(directory)", "chunk": "\(number)"])
        try connection.execute("UPDATE _ingest_processes SET reads_kept = false WHERE id = $1", [process])
    }
}
