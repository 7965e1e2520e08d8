import Foundation
import IngestJSON

/// File operations with errors worded for the command line.
enum FileOpsCLI {
    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    /// Writes `text` whole (to a temporary name, then renamed).
    static func write(_ text: String, to path: String) throws {
        do {
            try FileOps.writeAtomically(Array(text.utf8), to: path)
        } catch let error as IOError {
            throw CommandFailure("\(error)")
        } catch {
            throw CommandFailure("cannot write \(path): \(error)")
        }
    }

    /// Refuses, before any work, a path `write` would refuse (a directory, a link).
    static func checkWritable(_ path: String) throws {
        do { try FileOps.checkWritable(path) } catch { throw CommandFailure("\(error)") }
    }

    static func makeDirectory(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw CommandFailure("cannot create directory \(path): \(error.localizedDescription)")
        }
    }
}

extension FileOpsCLI {
    static func size(_ path: String) throws -> Int {
        guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int else {
            throw CommandFailure("cannot read the size of \(path)")
        }
        return size
    }
}
