import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// Xcode model files (`.xcdatamodeld`, `.xcdatamodel`), written by hand in Apple's format:
/// what Ingest honours is read exactly, and what it cannot is refused by name.
@Suite struct XcodeModelTests {
    static let models = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/models")

    @Test func aPackageLoadsItsCurrentVersionExactly() throws {
        let model = try Model.load(xcdatamodel: Self.models.appendingPathComponent("Photos.xcdatamodeld"))
        let expected = Model(entities: [
            Entity("Photo", attributes: [
                Attribute("id", .string, optional: false),
                Attribute("title", .string),
                Attribute("views", .int64, default: .int(0)),
                Attribute("rating", .double, optional: false, default: .double(2.5)),
                Attribute("isPublic", .bool, optional: false, default: .bool(true)),
                Attribute("width", .int32, default: .int(0)),
                Attribute("orientation", .int16, default: .int(1)),
                Attribute("uploadDate", .date, default: .date(Date(timeIntervalSinceReferenceDate: 700_000_000)), indexed: true),
                Attribute("thumbnail", .binary),
                Attribute("uuid", .uuid),
                Attribute("price", .decimal, default: .decimal("0.0")),
            ], relationships: [
                Relationship("whoTook", to: "Photographer", inverse: "photos"),
                Relationship("tags", to: "Tag", inverse: "photos", toMany: true),
            ], uniquenessConstraints: [["id"]]),
            Entity("Photographer", attributes: [Attribute("id", .string, optional: false), Attribute("name", .string, indexed: true)],
                   relationships: [Relationship("photos", to: "Photo", inverse: "whoTook", toMany: true, deleteRule: .cascade)],
                   uniquenessConstraints: [["id"]]),
            Entity("Tag", attributes: [Attribute("name", .string, optional: false)],
                   relationships: [Relationship("photos", to: "Photo", inverse: "tags", toMany: true, deleteRule: .deny)],
                   uniquenessConstraints: [["name"]]),
        ])
        #expect(model == expected)
        // A store made with it works as with any model.
        let directory = try TemporaryDirectory()
        let coordinator = try PersistentStoreCoordinator(model: model, path: directory.file("photos.sqlite"))
        let context = ObjectContext(coordinator: coordinator, name: "xcode")
        try context.performAndWait {
            let photo = context.insert("Photo")
            photo.id = .string("p1")
            #expect(photo.rating == .double(2.5) && photo.isPublic == .bool(true))
            try context.save()
            #expect(try context.count("Photo") == 1)
        }
    }

    @Test func aBareModelVersionLoadsToo() throws {
        let model = try Model.load(xcdatamodel: Self.models.appendingPathComponent("Photos.xcdatamodeld/Photos.xcdatamodel"))
        #expect(model == Model(entities: [Entity("Photo", attributes: [Attribute("id", .string, optional: false), Attribute("title", .string)])]))
    }

    @Test func whatItCannotHonourIsRefusedByName() throws {
        let url = Self.models.appendingPathComponent("Unsupported.xcdatamodel")
        #expect(throws: XcodeModelError(path: url.appendingPathComponent("contents").path, problems: [
            "Photo.location: Transformable attributes are not supported",
            "Photo.scale: Float attributes are not supported",
            "Photo.views: the default \"many\" is not a valid Integer 64",
            "Photo.pages: the delete rule No Action is not supported (Nullify, Cascade or Deny)",
            "Photo.cover: relationships without an inverse are not supported (set its inverse in Xcode)",
            "Photo.byNameAndViews: fetch indexes over 2 properties are not supported (one property each)",
        ])) { try Model.load(xcdatamodel: url) }
    }

    @Test func aPackageWhoseCurrentVersionIsUnclearIsRefusedSayingWhy() throws {
        let directory = try TemporaryDirectory()
        let package = URL(fileURLWithPath: directory.file("Two.xcdatamodeld"))
        let source = Self.models.appendingPathComponent("Photos.xcdatamodeld")
        try FileManager.default.copyItem(at: source, to: package)
        try FileManager.default.removeItem(at: package.appendingPathComponent(".xccurrentversion"))
        #expect(throws: XcodeModelError(path: package.path, problems: ["has 2 versions and no .xccurrentversion saying which is current"])) {
            try Model.load(xcdatamodel: package)
        }
        let pointer = package.appendingPathComponent(".xccurrentversion")
        let plist = try PropertyListSerialization.data(fromPropertyList: ["_XCCurrentVersionName": "Photos 3.xcdatamodel"], format: .xml, options: 0)
        try plist.write(to: pointer)
        #expect(throws: XcodeModelError(path: pointer.path, problems: [
            "names the version Photos 3.xcdatamodel, which the package does not hold (it holds: Photos 2.xcdatamodel, Photos.xcdatamodel)",
        ])) { try Model.load(xcdatamodel: package) }
        let broken = package.appendingPathComponent("Photos.xcdatamodel/contents")
        try Data("<model><entity name=\"A\"></model>".utf8).write(to: broken)
        try PropertyListSerialization.data(fromPropertyList: ["_XCCurrentVersionName": "Photos.xcdatamodel"], format: .xml, options: 0).write(to: pointer)
        #expect(throws: XcodeModelError(path: broken.path, problems: ["not well-formed XML at line 1: a closing tag does not match the open one (in <entity>)"])) {
            try Model.load(xcdatamodel: package)
        }
    }

    @Test func booleanDefaultsAsCoreDataReadsThemAndBadRuleBoundsRefused() throws {
        let directory = try TemporaryDirectory()
        let model = URL(fileURLWithPath: directory.file("Small.xcdatamodel"))
        try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
        try Data("""
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                <entity name="Flag" representedClassName="Flag" syncable="YES">
                    <attribute name="on" attributeType="Boolean" defaultValueString="1" usesScalarValueType="YES"/>
                    <attribute name="off" attributeType="Boolean" defaultValueString="0" usesScalarValueType="YES"/>
                </entity>
            </model>
            """.utf8).write(to: model.appendingPathComponent("contents"))
        #expect(try Model.load(xcdatamodel: model) == Model(entities: [Entity("Flag", attributes: [
            Attribute("on", .bool, optional: false, default: .bool(true)), Attribute("off", .bool, optional: false, default: .bool(false)),
        ])]))
        try Data("""
            <model><entity name="Flag"><attribute name="level" attributeType="Integer 16" minValueString="low"/>
            <compoundIndexes><compoundIndex><index value="level"/></compoundIndex></compoundIndexes></entity></model>
            """.utf8).write(to: model.appendingPathComponent("contents"))
        #expect(throws: XcodeModelError(path: model.appendingPathComponent("contents").path, problems: [
            "Flag.level: the minValueString \"low\" is not a valid Integer 16 bound",
            "Flag: compound indexes (compoundIndexes) are not supported",
        ])) { try Model.load(xcdatamodel: model) }
    }
}
