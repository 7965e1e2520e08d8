import Foundation
import IngestStore
import IngestTestSupport
import Testing

// Core Data's lifecycle methods on a generated type, in an extension of it (the generated
// file is rewritten by codegen): `Tag.display` is a transient attribute.
extension Tag {
    public func awakeFromInsert() { display = "new tag" }
    public func awakeFromFetch() { display = "#" + (name ?? "") }
    public func willSave() {
        // Tags are kept lowercased; the change is saved with the rest.
        if let name, name != name.lowercased() { self.name = name.lowercased() }
    }
    public func validateForInsert() throws {
        if name?.isEmpty == true { throw ObjectValidationError(property: "name", "must not be empty") }
    }
}

/// Lifecycle methods written on a generated type run once the type is registered.
@Suite struct TypedLifecycleTests {
    @Test func aRegisteredTypesMethodsRunAtInsertSaveAndFetch() throws {
        let (coordinator, directory) = try TypedClassTests.store()
        defer { withExtendedLifetime(directory) {} }
        coordinator.register(Tag.self)
        let context = ObjectContext(coordinator: coordinator, name: "typed")
        let id = try context.performAndWait {
            let tag = context.insert(Tag.self)
            #expect(tag.display == "new tag")
            tag.name = ""
            #expect(throws: StoreError.validation([#"Tag "": name: must not be empty"#])) { try context.save() }
            tag.name = "Sea"
            try context.save()
            #expect(tag.name == "sea" && !context.hasChanges)
            return tag.objectID
        }
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        reader.performAndWait {
            let tag = reader.object(with: id, as: Tag.self)
            #expect(tag.display == "#sea" && tag.name == "sea")
            #expect(!reader.hasChanges)
        }
    }
}
