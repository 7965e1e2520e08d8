import Foundation
import Synchronization
import Testing
@testable import IngestStore

/// What the hooks did, in order.
final class HookLog: Sendable {
    private let entries = Mutex<[String]>([])
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    /// The entries so far, forgetting them.
    func take() -> [String] { entries.withLock { entries in defer { entries = [] }; return entries } }
}

/// Lifecycle hooks and validation given as closures (`EntityLifecycle`), called at Core
/// Data's moments, on every backend.
@Suite struct LifecycleTests {
    static let model = Model(entities: [
        Entity("Item", attributes: [
            Attribute("id", .string, optional: false),
            Attribute("title", .string),
            Attribute("modified", .int64),
            Attribute("cache", .string, transient: true),
        ], relationships: [
            Relationship("owner", to: "Owner", inverse: "items"),
        ], uniquenessConstraints: [["id"]]),
        Entity("Owner", attributes: [Attribute("name", .string)], relationships: [
            Relationship("items", to: "Item", inverse: "owner", toMany: true, deleteRule: .cascade),
        ]),
    ])

    /// A store whose items log each hook as "hook id" and whose owners log prepareForDeletion
    /// with how many items they still hold.
    static func setUp(_ backend: StoreBackend, log: HookLog) throws -> (PersistentStoreCoordinator, Any) {
        let (coordinator, directory) = try TestModel.store(model, on: backend)
        @Sendable func note(_ hook: String) -> EntityLifecycle.Hook {
            { object in log.append("\(hook) \(object.id?.stringValue ?? "?")") }
        }
        coordinator.setLifecycle(EntityLifecycle(
            awakeFromInsert: { object in
                log.append("awakeFromInsert")
                object.title = "untitled"
            },
            awakeFromFetch: { object in
                note("awakeFromFetch")(object)
                object.cache = "warm"
            },
            willSave: { object in
                note("willSave")(object)
                if !object.isDeleted { object.modified = .int((object.modified?.intValue ?? 0) + 1) }
            },
            didSave: note("didSave"),
            prepareForDeletion: note("prepareForDeletion"),
            validateForInsert: { object in
                if object.title == "" { throw ObjectValidationError(property: "title", "must not be blank") }
            },
            validateForDelete: { object in
                if object.title == "keep" { throw ObjectValidationError("is kept") }
            }), forEntity: "Item")
        coordinator.setLifecycle(EntityLifecycle(prepareForDeletion: { owner in
            log.append("prepareForDeletion owner with \(owner.objects(forKey: "items").count) items")
        }), forEntity: "Owner")
        return (coordinator, directory)
    }

    @Test(arguments: StoreBackend.available)
    func hooksRunAtInsertSaveFetchAndDelete(backend: StoreBackend) throws {
        let log = HookLog()
        let (coordinator, directory) = try Self.setUp(backend, log: log)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "writer")
        let id = try context.performAndWait {
            let item = context.insert("Item")
            #expect(item.title == "untitled")
            item.id = "i1"
            try context.save()
            // willSave's change was saved with the insert.
            #expect(item.modified == .int(1) && !context.hasChanges)
            return item.objectID
        }
        #expect(log.take() == ["awakeFromInsert", "willSave i1", "didSave i1"])

        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        try reader.performAndWait {
            let item = reader.object(with: id)
            #expect(item.isFault)
            // Reading fires the fault: awakeFromFetch sets the transient, which is no change.
            #expect(item.cache == "warm" && item.title == "untitled" && item.modified == .int(1))
            #expect(!item.hasChanges && !reader.hasChanges)
            item.title = "Renamed"
            try reader.save()
            #expect(item.modified == .int(2))
            // A refaulted object is fetched again.
            reader.refresh(item, mergeChanges: false)
            #expect(item.cache == "warm")
        }
        #expect(log.take() == ["awakeFromFetch i1", "willSave i1", "didSave i1", "awakeFromFetch i1"])

        try reader.performAndWait {
            let owner = reader.insert("Owner")
            let item = reader.object(with: id)
            item.setObject(owner, forKey: "owner")
            try reader.save()
            _ = log.take()
            reader.delete(owner)
            // Prepared before its delete rule (cascade) runs: the owner still holds its item.
            #expect(log.take() == ["prepareForDeletion owner with 1 items"])
            try reader.save()
            #expect(item.isDeleted)
        }
        #expect(log.take() == ["prepareForDeletion i1", "willSave i1", "didSave i1"])
    }

    @Test(arguments: StoreBackend.available)
    func validationHooksFailTheSaveWithAStructuredProblem(backend: StoreBackend) throws {
        let log = HookLog()
        let (coordinator, directory) = try Self.setUp(backend, log: log)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let item = context.insert("Item")
            item.id = "i2"
            item.title = ""
            let error = #expect(throws: StoreError.self) { try context.save() }
            guard case .validation(let problems)? = error else { Issue.record("\(String(describing: error))"); return }
            #expect(problems.map(\.description) == [#"Item "i2": title: must not be blank"#])
            #expect(problems[0].rule == .custom && problems[0].property == "title" && problems[0].entity == "Item")
            #expect(error?.description == #"the save failed validation: Item "i2": title: must not be blank"#)
            item.title = "keep"
            try context.save()
            context.delete(item)
            let refused = #expect(throws: StoreError.self) { try context.save() }
            guard case .validation(let deleteProblems)? = refused else { Issue.record("\(String(describing: refused))"); return }
            #expect(deleteProblems.map(\.description) == ["\(item.objectID): is kept"])
            #expect(deleteProblems[0].property == nil && deleteProblems[0].rule == .custom)
        }
        let reader = ObjectContext(coordinator: coordinator)
        let count = try reader.performAndWait { try reader.count("Item") }
        #expect(count == 1)
    }

    @Test func anEntityWithoutHooksUsesItsParents() throws {
        let model = Model(entities: [
            Entity("Media", attributes: [Attribute("title", .string)]),
            Entity("Video", parent: "Media", attributes: [Attribute("length", .int64)]),
        ])
        let coordinator = try PersistentStoreCoordinator(inMemory: model)
        coordinator.setLifecycle(EntityLifecycle(awakeFromInsert: { $0.title = .string("new \($0.entityName)") }), forEntity: "Media")
        let context = ObjectContext(coordinator: coordinator)
        context.performAndWait {
            #expect(context.insert("Video").title == "new Video")
            #expect(context.insert("Media").title == "new Media")
        }
        coordinator.setLifecycle(nil, forEntity: "Media")
        context.performAndWait { #expect(context.insert("Video").title == nil) }
    }
}
