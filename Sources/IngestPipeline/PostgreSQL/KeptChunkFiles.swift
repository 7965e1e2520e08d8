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

    /// Stops reading the files: chunk `number` was not in its file as registered.
    func stopReading(after number: Int, _ connection: PostgresConnection) throws {
        guard reading.exchange(false, ordering: .relaxed) else { return }
        logger.notice("the importing process's chunk files cannot be read here as it wrote them; asking it to store its chunks instead",
                      metadata: ["directory": "\(directory)", "chunk": "\(number)"])
        try connection.execute("UPDATE _ingest_processes SET reads_kept = false WHERE id = $1", [process])
    }
}
