import Foundation
import IngestJSON
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// The split files of a PostgreSQL run's keeper that is gone, removed by whichever
/// process finds it gone (`PostgresRunSession.removeSplitFiles`): two processes may find
/// it at once, and what the other removed first is no failure.
@Suite struct GoneKeeperFilesTests {
    static let names = ["chunk-000001.ndjson", "chunk-000001.members", "chunk-000002.ndjson", "split-journal.ndjson"]

    static func keptDirectory(in dir: TemporaryDirectory) throws -> String {
        #expect(names.allSatisfy(Splitter.isSplitFile), "the names the caller's listing lets through")
        let kept = dir.file("ingest-split-kept")
        try FileManager.default.createDirectory(atPath: kept, withIntermediateDirectories: false)
        for name in names { try dir.write("ingest-split-kept/" + name, Array(name.utf8)) }
        return kept
    }

    @Test func theFilesAndTheirDirectoryAreRemoved() throws {
        let dir = try TemporaryDirectory()
        let kept = try Self.keptDirectory(in: dir)
        try PostgresRunSession.removeSplitFiles(Self.names, in: kept)
        #expect(!FileManager.default.fileExists(atPath: kept))
    }

    /// The race the listing cannot see: another process removed some files, or the whole
    /// directory, between this one's listing and its removal.
    @Test func filesAnotherProcessRemovedFirstAreNoFailure() throws {
        let dir = try TemporaryDirectory()
        let kept = try Self.keptDirectory(in: dir)
        try FileManager.default.removeItem(atPath: kept + "/" + Self.names[1])
        try FileManager.default.removeItem(atPath: kept + "/" + Self.names[2])
        try PostgresRunSession.removeSplitFiles(Self.names, in: kept)
        #expect(!FileManager.default.fileExists(atPath: kept))

        let gone = try Self.keptDirectory(in: dir)
        try FileManager.default.removeItem(atPath: gone)
        try PostgresRunSession.removeSplitFiles(Self.names, in: gone)
    }

    /// A link of a split file's name is not Ingest's: it and what it names stay, and so
    /// does the directory (the call throws: the directory is not empty).
    @Test func aLinkAmongTheFilesIsLeftAndTheDirectoryWithIt() throws {
        let dir = try TemporaryDirectory()
        let kept = try Self.keptDirectory(in: dir)
        let target = try dir.write("users-file.txt", Array("mine".utf8))
        try FileManager.default.removeItem(atPath: kept + "/" + Self.names[0])
        try FileManager.default.createSymbolicLink(atPath: kept + "/" + Self.names[0], withDestinationPath: target)
        #expect(throws: IOError(errno: ENOTEMPTY, operation: "remove", path: kept)) {
            try PostgresRunSession.removeSplitFiles(Self.names, in: kept)
        }
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: kept + "/" + Self.names[0]) == target)
        #expect(FileManager.default.fileExists(atPath: target))
        #expect(!FileManager.default.fileExists(atPath: kept + "/" + Self.names[1]))
    }

    /// A link at the directory's own name (the name is predictable, in the shared temporary
    /// directory) is not followed: the files of the directory it names stay.
    @Test func aLinkInThePlaceOfTheDirectoryIsNotFollowed() throws {
        let dir = try TemporaryDirectory()
        let elsewhere = try Self.keptDirectory(in: dir)
        let link = dir.file("ingest-split-link")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: elsewhere)
        #expect(throws: IOError(errno: ENOTDIR, operation: "open", path: link)) {
            try PostgresRunSession.removeSplitFiles(Self.names, in: link)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).sorted() == Self.names.sorted())
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == elsewhere)
    }
}
