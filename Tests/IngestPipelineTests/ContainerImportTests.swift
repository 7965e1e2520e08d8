import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// An `Importer` running on a `PersistentContainer`'s coordinator: the view context merges
/// every save of the import as it commits (no history stream), on every store, the one in
/// memory included, through the batch path and through contexts.
@Suite struct ContainerImportTests {
    enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case sqlite, postgres, memory
        var testDescription: String { rawValue }
        static let available: [Backend] = PostgresServer.isAvailable ? [.sqlite, .postgres, .memory] : [.sqlite, .memory]
    }

    /// How the workers write: rows without objects, or objects in contexts (a to-many of tags).
    enum WritePath: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case batch, objects
        var testDescription: String { rawValue }
    }

    /// A container on a new store of `backend`, for `spec`'s model: a file in `directory`, a
    /// database on a server of the test's own (kept alive with it), or memory.
    static func container(_ backend: Backend, spec: PipelineSpec, in directory: TemporaryDirectory) throws -> (PersistentContainer, PostgresServer?) {
        switch backend {
        case .sqlite: return (try PersistentContainer(model: spec.model, path: directory.file("store.sqlite")), nil)
        case .memory: return (try PersistentContainer(inMemory: spec.model), nil)
        case .postgres:
            let server = try PostgresServer.database()
            return (try PersistentContainer(model: spec.model, url: URL(string: server.url)!), server)
        }
    }

    /// 250 posts p0…p249 (title t<i>, views i), by 5 authors (a0…a4), and with `tags` two
    /// tags each of 3 (g0…g2).
    static func feed(_ directory: TemporaryDirectory, tags: Bool) throws -> String {
        let lines = (0..<250).map { i in
            let tagList = tags ? #","tags":[{"name":"g\#(i % 3)"},{"name":"g\#((i + 1) % 3)"}]"# : ""
            return #"{"id":"p\#(i)","title":"t\#(i)","views":\#(i),"author":{"id":\#(i % 5),"name":"a\#(i % 5)"}\#(tagList)}"#
        }
        return try directory.write("posts.ndjson", Array((lines.joined(separator: "\n") + "\n").utf8))
    }

    @MainActor
    @Test(.timeLimit(.minutes(5)), arguments: Backend.available, WritePath.allCases)
    func theViewContextHoldsExactlyTheImportedObjectsFromTheImportsOwnSaves(backend: Backend, path: WritePath) async throws {
        let directory = try TemporaryDirectory()
        // The pipeline's bytes: a PostgreSQL run stores them for the processes that join it.
        let pipeline = Array(UpdateRuleTests.pipelineText(tags: path == .objects ? "replace" : nil).utf8)
        let spec = try PipelineSpec.parse(pipeline)
        let (container, server) = try Self.container(backend, spec: spec, in: directory)
        defer { withExtendedLifetime(server) {} }
        let view = container.viewContext
        var merged: [String: Set<ObjectID>] = [:]
        var notices = 0
        view.performAndWait {
            view.onDidMerge = { notice in
                notices += 1
                for id in notice.inserted { merged[id.entityName, default: []].insert(id) }
            }
        }
        var options = Importer.Options(feed: try Self.feed(directory, tags: path == .objects), store: "ignored",
                                       workers: 2, saveEvery: 25, chunkSize: 50)
        options.objectPath = path == .objects
        // The view context fetches by them meanwhile (a PostgreSQL store always keeps them).
        options.keepIndexes = backend != .postgres
        let importer = try Importer(pipeline: pipeline, options: options, coordinator: container.persistentStoreCoordinator)
        defer { if backend == .memory { Self.removeRunFiles(of: importer) } }
        #expect(importer.options.store == container.persistentStoreCoordinator.path)
        let report = try await Self.offTheMainActor { try importer.run() }
        #expect(report.imported == 250 && report.rejectedThisRun == 0)
        // Every save's merge was queued on the main queue before the save returned.
        await Task.yield()
        try view.performAndWait {
            #expect(notices >= 10, "one notice a save: 250 records, 25 to a save")
            let posts = try view.fetch(FetchRequest("Post", sortDescriptors: [FetchSortDescriptor("views")]))
            #expect(posts.count == 250)
            #expect(Set(posts.map(\.objectID)) == merged["Post"], "every post arrived in a notice the view merged")
            #expect(try view.count("Author") == 5)
            #expect(merged["Author"]?.count == 5)
            let p17 = posts[17]
            #expect(p17["id"] == .string("p17") && p17["title"] == .string("t17") && p17["views"] == .int(17))
            #expect(p17.object(forKey: "author")?["name"] == .string("a2"))
            #expect(posts.last?["title"] == .string("t249"))
            if path == .objects {
                #expect(Set(p17.objects(forKey: "tags").compactMap { $0["name"]?.stringValue }) == ["g2", "g0"])
                #expect(try view.count("Tag") == 3)
            }
        }
        #expect(container.persistentStoreCoordinator.recordsHistory, "the coordinator records history again after the run")
    }

    /// An import into a store in memory, stopped at a save boundary, goes on where it
    /// stopped when run again on the same coordinator: every record once.
    @Test func anImportIntoAStoreInMemoryResumesOnTheSameCoordinator() throws {
        let directory = try TemporaryDirectory()
        let spec = try UpdateRuleTests.spec()
        let container = try PersistentContainer(inMemory: spec.model)
        let coordinator = container.persistentStoreCoordinator
        let options = Importer.Options(feed: try Self.feed(directory, tags: false), store: "", workers: 1, saveEvery: 25, chunkSize: 50)
        let first = Importer(spec: spec, options: options, coordinator: coordinator)
        defer { Self.removeRunFiles(of: first) }
        // At a save of records: the split's end is an event too, and may come first.
        first.addProgressObserver { event in if event.recordsThisRun > 0 { first.cancel() } }
        #expect(throws: ImportInterrupted.self) { try first.run() }
        let done = try coordinator.count("Post")
        #expect(done > 0 && done < 250)
        let report = try Importer(spec: spec, options: options, coordinator: coordinator).run()
        #expect(report.run == 1 && report.records == 250)
        #expect(report.imported == 250 - done)
        #expect(try coordinator.count("Post") == 250)
        #expect(report.chunksDirectory?.hasPrefix(FileManager.default.temporaryDirectory.path) == true)
    }

    /// A store in memory keeps its run's files in the temporary directory while it lives
    /// (the report and rejects are there to read after the run), and they go with it: a
    /// service importing into scratch stores does not fill the temporary directory.
    @Test func aStoreInMemoryTakesItsRunFilesWithItWhenItGoes() throws {
        let directory = try TemporaryDirectory()
        let spec = try UpdateRuleTests.spec()
        let options = Importer.Options(feed: try Self.feed(directory, tags: false), store: "", workers: 1, saveEvery: 25, chunkSize: 50)
        let base: String = try {
            let container = try PersistentContainer(inMemory: spec.model)
            let importer = Importer(spec: spec, options: options, coordinator: container.persistentStoreCoordinator)
            // Stopped at a save boundary, so that the run's chunks are still there too.
            let observer = importer.addProgressObserver { event in if event.recordsThisRun > 0 { importer.cancel() } }
            #expect(throws: ImportInterrupted.self) { try importer.run() }
            // The observer holds the importer, which holds the coordinator.
            importer.removeProgressObserver(observer)
            for suffix in [".lock", ".chunks"] {
                #expect(FileManager.default.fileExists(atPath: importer.filesBase + suffix), "\(suffix) while the store lives")
            }
            return importer.filesBase
        }()
        #expect(base.hasPrefix(FileManager.default.temporaryDirectory.path))
        for suffix in [".lock", ".report.json", ".rejects.ndjson", ".chunks"] {
            #expect(!FileManager.default.fileExists(atPath: base + suffix), "\(suffix) after the store went")
        }
    }

    /// A store in memory keeps its run's files in the temporary directory, under its store
    /// ID, until its coordinator goes: removed at once, whatever still holds the coordinator.
    static func removeRunFiles(of importer: Importer) {
        Importer.removeRunFiles(base: importer.filesBase)
    }

    /// The importer refuses a coordinator made with another model, before anything runs.
    @Test func anImporterRefusesACoordinatorOfAnotherModel() throws {
        let directory = try TemporaryDirectory()
        let spec = try UpdateRuleTests.spec()
        let other = Model(entities: [Entity("Note", attributes: [Attribute("id", .string)])])
        let container = try PersistentContainer(inMemory: other)
        let importer = Importer(spec: spec, options: Importer.Options(feed: try Self.feed(directory, tags: false), store: ""),
                                coordinator: container.persistentStoreCoordinator)
        let error = #expect(throws: ImportError.self) { try importer.run() }
        #expect(error?.description.contains("the coordinator's model is not the pipeline's") == true)
        #expect(try container.persistentStoreCoordinator.count("Note") == 0)
    }

    /// Runs `body` on a thread of the pool, so the main actor stays free for the view
    /// context's merges while an import blocks.
    static func offTheMainActor<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }
}
