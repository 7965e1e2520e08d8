import Foundation
import IngestTestSupport
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

    /// A store in a fresh directory; keep the directory alive as long as the store.
    static func store(_ model: Model = TestModel.model) throws -> (PersistentStoreCoordinator, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        return (try PersistentStoreCoordinator(model: model, path: directory.file("store.sqlite")), directory)
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
