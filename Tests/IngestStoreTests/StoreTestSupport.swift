import Foundation
import IngestTestSupport
import Synchronization
import Testing
@testable import IngestStore

/// The model the tests share: photos, photographers, tags, albums (deny) and
/// folders (cascade), and an entity with one attribute of every type.
enum TestModel {
    static let model = Model(entities: [
        Entity("Photo", attributes: [
            Attribute("id", .string, optional: false),
            Attribute("title", .string),
            Attribute("views", .int64, default: 0),
        ], relationships: [
            Relationship("whoTook", to: "Photographer", inverse: "photos"),
            Relationship("tags", to: "Tag", inverse: "photos", toMany: true),
            Relationship("album", to: "Album", inverse: "photos"),
            Relationship("cover", to: "Album", inverse: "coverPhoto"),
        ], uniquenessConstraints: [["id"]]),
        Entity("Photographer", attributes: [
            Attribute("id", .string, optional: false),
            Attribute("name", .string),
        ], relationships: [
            Relationship("photos", to: "Photo", inverse: "whoTook", toMany: true, deleteRule: .nullify),
        ], uniquenessConstraints: [["id"]]),
        Entity("Tag", attributes: [Attribute("name", .string, optional: false)], relationships: [
            Relationship("photos", to: "Photo", inverse: "tags", toMany: true),
        ], uniquenessConstraints: [["name"]]),
        Entity("Album", attributes: [Attribute("name", .string)], relationships: [
            Relationship("photos", to: "Photo", inverse: "album", toMany: true, deleteRule: .deny),
            Relationship("coverPhoto", to: "Photo", inverse: "cover"),
            Relationship("folder", to: "Folder", inverse: "albums"),
        ]),
        Entity("Folder", attributes: [Attribute("name", .string)], relationships: [
            Relationship("albums", to: "Album", inverse: "folder", toMany: true, deleteRule: .cascade),
        ]),
        Entity("Everything", attributes: AttributeType.allCases.map { Attribute("a_\($0.rawValue)", $0) }),
    ])

    /// A new, empty store on `backend`: a SQLite file in a fresh directory, or a fresh
    /// database on the suite's PostgreSQL server. Keep the directory alive as long as the store.
    static func store(_ model: Model = TestModel.model, on backend: StoreBackend = .sqlite) throws -> (PersistentStoreCoordinator, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        switch backend {
        case .sqlite:
            return (try PersistentStoreCoordinator(model: model, path: directory.file("store.sqlite")), directory)
        case .memory:
            return (try PersistentStoreCoordinator(inMemory: model), directory)
        case .postgres:
            let url = try StoreBackend.newDatabase()
            return (try PersistentStoreCoordinator(model: model, url: URL(string: url)!), directory)
        }
    }
}

/// Inserts a photo (and saves nothing).
@discardableResult
func insertPhoto(_ context: ObjectContext, id: String, title: String? = nil) -> ManagedObject {
    let photo = context.insert("Photo")
    photo.id = .string(id)
    if let title { photo.title = .string(title) }
    return photo
}

/// `sample(type)` as `backend` can hold it: PostgreSQL's text has no NUL, and (`stored`)
/// its timestamps keep whole microseconds; decimals are kept canonical on both (`DecimalText`).
func sample(_ type: AttributeType, on backend: StoreBackend, stored: Bool = false) -> Value {
    if type == .decimal && stored { return .decimal("12.34") }
    guard backend == .postgres else { return sample(type) }
    switch sample(type) {
    case .string(let text): return .string(text.replacingOccurrences(of: "\u{0}", with: "0"))
    case .date(let date) where stored: return .date(Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1_000_000).rounded() / 1_000_000))
    case let value: return value
    }
}

/// A value the store can hold for every attribute type, and a second one.
func sample(_ type: AttributeType) -> Value {
    switch type {
    case .string: .string("text\u{0}with NUL and é")
    case .int16: .int(Int64(Int16.min))
    case .int32: .int(Int64(Int32.max))
    case .int64: .int(Int64.min)
    case .double: .double(-0.1)
    case .bool: .bool(true)
    case .date: .date(Date(timeIntervalSinceReferenceDate: 752_000_000.123_456_7))
    case .binary: .binary([0, 1, 2, 255, 0])
    case .uuid: .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)
    case .decimal: .decimal("12.3400")
    }
}

/// The backends the store's suite runs on: every test that takes a `StoreBackend` runs
/// once on each, with the same expectations.
enum StoreBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres, memory

    var testDescription: String { rawValue }

    /// SQLite and in memory always; PostgreSQL where a server can be started (when it
    /// cannot, `theStoreSuiteRunsOnPostgreSQLToo` is reported as skipped, with the reason).
    static let available: [StoreBackend] = PostgresServer.isAvailable ? [.sqlite, .postgres, .memory] : [.sqlite, .memory]

    /// The backends a second coordinator or another process can open (tests of what
    /// crosses processes): a store in memory is reached only through its own coordinator.
    static let reopenable: [StoreBackend] = available.filter { $0 != .memory }

    /// SQLite's SQL and messages: a file or in memory.
    var speaksSQLite: Bool { self != .postgres }

    /// One server for the whole suite, started on first use and stopped when the test process exits.
    private static let server: Result<PostgresServer, any Error> = {
        let result = Result { try PostgresServer() }
        if case .success(let server) = result { server.stopAtExit() }
        return result
    }()

    private static let counter = Mutex(0)

    /// The URL of a new, empty database on the suite's server.
    static func newDatabase() throws -> String {
        let server = try server.get()
        let number = counter.withLock { $0 += 1; return $0 }
        let name = "store\(number)"
        let admin = try PostgresConnection(PostgresURL(server.url))
        try admin.execute("CREATE DATABASE \(name) STRATEGY FILE_COPY")
        return server.url.replacingOccurrences(of: "@/ingest?", with: "@/\(name)?")
    }
}

/// Reported as skipped, with the reason, where no PostgreSQL server can start: the store's
/// suite then ran on SQLite only.
@Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
func theStoreSuiteRunsOnPostgreSQLToo() {
    #expect(StoreBackend.available == [.sqlite, .postgres, .memory])
}
