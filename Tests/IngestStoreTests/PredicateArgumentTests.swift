import IngestTestSupport
import Foundation
import Testing
@testable import IngestStore

/// Swift values as a format's arguments (`QueryPredicate(format: "whoTook == %@", ana)`):
/// what they become, what is refused, and that SQL and in-memory evaluation agree on them.
@Suite struct PredicateArgumentTests {
    static let someID = ObjectID(uri: "ingest://E621E1F8-C36C-495A-93FC-0C247A3E6E5F/Photographer/7")!

    @Test func swiftValuesBecomeTheValuesTheyHold() throws {
        let date = Date(timeIntervalSinceReferenceDate: 752_000_000.5)
        let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        let title: String? = "Harbour"
        let missing: String? = nil
        func becomes(_ argument: (any PredicateArgumentConvertible)?, _ expected: IngestStore.PredicateExpression,
                     sourceLocation: SourceLocation = #_sourceLocation) throws {
            let predicate = try QueryPredicate(format: "k == %@", argument)
            #expect(predicate == .comparison(PredicateComparison(.keyPath(["k"]), .equal, expected)), sourceLocation: sourceLocation)
        }
        try becomes("Harbour", .value(.string("Harbour")))
        try becomes(title, .value(.string("Harbour")))
        try becomes(missing, .value(nil))
        try becomes(nil, .value(nil))
        try becomes(42, .value(.int(42)))
        try becomes(Int8(-3), .value(.int(-3)))
        try becomes(Int16.min, .value(.int(-32_768)))
        try becomes(UInt32.max, .value(.int(4_294_967_295)))
        try becomes(Int64.max, .value(.int(Int64.max)))
        try becomes(0.25, .value(.double(0.25)))
        try becomes(Float(0.5), .value(.double(0.5)))
        try becomes(true, .value(.bool(true)))
        try becomes(date, .value(.date(date)))
        try becomes(uuid, .value(.uuid(uuid)))
        try becomes(Data([0, 255]), .value(.binary([0, 255])))
        try becomes(Decimal(string: "12.340")!, .value(.decimal("12.34")))
        try becomes(Value.int(5), .value(.int(5)))
        try becomes(["a", "b"], .list([.string("a"), .string("b")]))
        try becomes(["a", nil] as [String?], .list([.string("a"), nil]))
        try becomes([1, 2] as [Int], .list([.int(1), .int(2)]))
        try becomes([] as [String], .list([]))
        try becomes(Self.someID, .object(Self.someID))
        try becomes([Self.someID, nil] as [ObjectID?], .objects([Self.someID, nil]))
        try becomes(PredicateArgument.value(.string("x")), .value(.string("x")))
        #expect(try QueryPredicate(format: "title IN %@", Set(["only"])) ==
            .comparison(PredicateComparison(.keyPath(["title"]), .in, .list([.string("only")]))))
        #expect(try QueryPredicate(format: "%K == %@ AND views > %d AND ratio < %f", "whoTook.name", "Ana", 3, 2) == .and([
            .comparison(PredicateComparison(.keyPath(["whoTook", "name"]), .equal, .value(.string("Ana")))),
            .comparison(PredicateComparison(.keyPath(["views"]), .greater, .value(.int(3)))),
            .comparison(PredicateComparison(.keyPath(["ratio"]), .less, .value(.double(2)))),
        ]))
        // `%K` takes a key spelled like a keyword: it is a name, never parsed.
        #expect(try QueryPredicate(format: "%K == 1", "in") == .comparison(PredicateComparison(.keyPath(["in"]), .equal, .value(.int(1)))))
        #expect(try QueryPredicate(format: "whoTook == $WHO AND views > $MIN").substituting(["WHO": Self.someID, "MIN": 3]) == .and([
            .comparison(PredicateComparison(.keyPath(["whoTook"]), .equal, .object(Self.someID))),
            .comparison(PredicateComparison(.keyPath(["views"]), .greater, .value(.int(3)))),
        ]))
    }

    @Test func argumentErrorsNameThePositionAndTheSpecifier() {
        let cases: [(String, [(any PredicateArgumentConvertible)?], PredicateArgumentError)] = [
            ("views > %d AND title == %@", [5], PredicateArgumentError(.missing, position: 2, specifier: "%@", column: 25)),
            ("views > %d", [5, "x"], PredicateArgumentError(.unused, position: 2)),
            ("views > %d", ["5"], PredicateArgumentError(.wrongType, position: 1, specifier: "%d", found: "a string", column: 9)),
            ("views > %i", [5.5], PredicateArgumentError(.wrongType, position: 1, specifier: "%i", found: "a double", column: 9)),
            ("views > %lld", [nil], PredicateArgumentError(.wrongType, position: 1, specifier: "%lld", found: "nil", column: 9)),
            ("views > %ld", [true], PredicateArgumentError(.wrongType, position: 1, specifier: "%ld", found: "a boolean", column: 9)),
            ("title == %@ AND views < %f", ["t", "x"], PredicateArgumentError(.wrongType, position: 2, specifier: "%f", found: "a string", column: 25)),
            ("%K == 1", [3], PredicateArgumentError(.wrongType, position: 1, specifier: "%K", found: "an integer", column: 1)),
            ("%K == 1", [Self.someID], PredicateArgumentError(.wrongType, position: 1, specifier: "%K", found: "an object", column: 1)),
            ("%K == 1", ["whoTook..name"], PredicateArgumentError(.wrongType, position: 1, specifier: "%K", found: "a string that is not a key path", column: 1)),
            ("views > %d", [Self.someID], PredicateArgumentError(.wrongType, position: 1, specifier: "%d", found: "an object", column: 9)),
            ("whoTook IN %@", [[PredicateArgument.object(Self.someID), "x"]],
             PredicateArgumentError(.wrongType, position: 1, specifier: "%@", found: "a list holding objects and values", column: 12)),
            ("title IN %@", [[["a"], ["b"]]], PredicateArgumentError(.wrongType, position: 1, specifier: "%@", found: "a list holding lists", column: 10)),
        ]
        for (format, arguments, expected) in cases {
            #expect(throws: expected, "\(format)") { try QueryPredicate(format: format, arguments: arguments) }
        }
        let error = #expect(throws: PredicateArgumentError.self) { try QueryPredicate(format: "views > %d", "secret") }
        #expect(error?.description == "argument 1 is a string, which %d at column 9 does not take (an integer)")
        #expect(!(error?.description.contains("secret") ?? true))
        let missing = #expect(throws: PredicateArgumentError.self) { try QueryPredicate(format: "a == %@ AND b == %@", 1) }
        #expect(missing?.description == "%@ at column 18 needs argument 2, but only 1 were given")
        let unused = #expect(throws: PredicateArgumentError.self) { try QueryPredicate(format: "a == 1", 1) }
        #expect(unused?.description == "argument 1 is unused: the format takes 0")
    }

    // MARK: - Against a store

    /// Photographers ana (p1, p2) and bo (p3), cy (none); p4 has no photographer and no
    /// title; two Everything rows, one with a value of every type and one empty.
    static func fixture(_ backend: StoreBackend) throws -> (PersistentStoreCoordinator, TemporaryDirectory) {
        let (coordinator, directory) = try TestModel.store(on: backend)
        let context = ObjectContext(coordinator: coordinator, name: "fixture")
        try context.performAndWait {
            var people: [String: ManagedObject] = [:]
            for (id, name) in [("ana", "Ana"), ("bo", "Bo"), ("cy", "Cy")] {
                let p = context.insert("Photographer"); p.id = .string(id); p.name = .string(name)
                people[id] = p
            }
            let rows: [(String, String?, Int64, String?)] = [
                ("p1", "Harbour", 10, "ana"), ("p2", "x' OR 1=1 --", 250, "ana"), ("p3", "Café", 40, "bo"), ("p4", nil, 0, nil),
            ]
            for (id, title, views, by) in rows {
                let photo = insertPhoto(context, id: id, title: title)
                photo.views = .int(views)
                photo.setObject(by.flatMap { people[$0] }, forKey: "whoTook")
            }
            let full = context.insert("Everything")
            for type in AttributeType.allCases { full["a_\(type.rawValue)"] = sample(type, on: backend, stored: true) }
            _ = context.insert("Everything")
            try context.save()
        }
        return (coordinator, directory)
    }

    /// The `id`s of the `entity` objects the predicate selects in SQL and in memory, which must agree.
    static func selected(_ context: ObjectContext, _ entity: String, _ predicate: QueryPredicate) throws -> [String] {
        let viaSQL = try context.fetch(FetchRequest(entity, predicate: predicate, includesPendingChanges: false))
        let inMemory = try context.fetch(entity).filter { try predicate.evaluate(with: $0) }
        let ids = { (objects: [ManagedObject]) in objects.map { $0.id?.stringValue ?? "-" }.sorted() }
        #expect(ids(viaSQL) == ids(inMemory), "SQL and memory differ on \(predicate)")
        #expect(try context.count(for: FetchRequest(entity, predicate: predicate, includesPendingChanges: false)) == viaSQL.count)
        return ids(viaSQL)
    }

    @Test(arguments: StoreBackend.available) func swiftValuesSelectTheSameObjectsInSQLAndInMemory(backend: StoreBackend) throws {
        let (coordinator, directory) = try Self.fixture(backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let people = Dictionary(uniqueKeysWithValues: try context.fetch("Photographer").map { ($0.id!.stringValue!, $0) })
            let (ana, bo) = (people["ana"]!, people["bo"]!)
            let title = "Harbour"
            let cases: [(String, [(any PredicateArgumentConvertible)?], [String])] = [
                ("title == %@", [title], ["p1"]),
                ("title == %@", [String?.none], ["p4"]),
                ("title != %@", [title], ["p2", "p3", "p4"]),
                ("views > %d", [39], ["p2", "p3"]),
                ("views > %ld", [Int64(39)], ["p2", "p3"]),
                ("views > %i", [Int32(39)], ["p2", "p3"]),
                ("views >= %@", [UInt8(40)], ["p2", "p3"]),
                ("views < %f", [10.5], ["p1", "p4"]),
                ("views < %f", [Float(10.5)], ["p1", "p4"]),
                ("views BETWEEN %@", [[10, 40]], ["p1", "p3"]),
                ("title IN %@", [["Harbour", "Café"]], ["p1", "p3"]),
                ("title IN %@", [Set(["Harbour"])], ["p1"]),
                ("title IN %@", [["Café", nil] as [String?]], ["p3", "p4"]),
                ("%K == %@", ["whoTook.name", "Bo"], ["p3"]),
                ("whoTook == %@", [ana], ["p1", "p2"]),
                ("whoTook == %@", [bo.objectID], ["p3"]),
                ("whoTook != %@", [ana], ["p3", "p4"]),
                ("NOT whoTook == %@", [bo], ["p1", "p2", "p4"]),
                ("whoTook == %@", [ManagedObject?.none], ["p4"]),
                ("whoTook IN %@", [[ana, bo]], ["p1", "p2", "p3"]),
                ("whoTook IN %@", [[bo, nil] as [ManagedObject?]], ["p3", "p4"]),
                ("whoTook IN %@", [[ObjectID]()], []),
                ("title == %@ AND whoTook == %@", [title, ana], ["p1"]),
                ("whoTook == %@ OR views == %d", [bo, 0], ["p3", "p4"]),
            ]
            for (format, arguments, expected) in cases {
                #expect(try Self.selected(context, "Photo", QueryPredicate(format: format, arguments: arguments)) == expected,
                        "\(format)")
            }
            #expect(try Self.selected(context, "Photographer", QueryPredicate(format: "ANY photos.title IN %@", ["Café"])) == ["bo"])
            #expect(try Self.selected(context, "Photographer", QueryPredicate(format: "NONE photos.views > %d", 5)) == ["cy"])

            let full: [(any PredicateArgumentConvertible)?] = [
                sample(.date, on: backend, stored: true).dateValue!, sample(.uuid).uuidValue!, true,
                Decimal(string: "12.34")!, Data([0, 1, 2, 255, 0]), Int16.min, Int32.max, Int64.min, -0.1,
            ]
            let format = "a_date == %@ AND a_uuid == %@ AND a_bool == %@ AND a_decimal == %@ AND a_binary == %@"
                + " AND a_int16 == %d AND a_int32 == %d AND a_int64 == %lld AND a_double == %f"
            let everything = try QueryPredicate(format: format, arguments: full)
            #expect(try context.count(for: FetchRequest("Everything", predicate: everything)) == 1)
            #expect(try context.fetch("Everything").filter { try everything.evaluate(with: $0) }.count == 1)
        }
    }

    @Test(arguments: StoreBackend.available) func aHostileStringIsBoundAndMatchesOnlyThatTitle(backend: StoreBackend) throws {
        let (coordinator, directory) = try Self.fixture(backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        let hostile = "x' OR 1=1 --"
        let (exact, other) = try context.performAndWait {
            (try Self.selected(context, "Photo", QueryPredicate(format: "title == %@", hostile)),
             try Self.selected(context, "Photo", QueryPredicate(format: "title == %@", "Harbour' OR '1'='1")))
        }
        #expect(exact == ["p2"])
        #expect(other == [])
        let (sql, arguments) = try coordinator.sql(for: FetchRequest("Photo", predicate: try QueryPredicate(format: "title == %@", hostile)))
        #expect(!sql.contains("1=1"))
        #expect(arguments == [.string(hostile)])
    }

    /// An unsaved object is named by its temporary ID: no stored row points at it, so SQL
    /// selects nothing, and the context's pending changes supply the objects that do.
    @Test(arguments: StoreBackend.available) func unsavedObjectsAndChangesCountThroughPendingChanges(backend: StoreBackend) throws {
        let (coordinator, directory) = try Self.fixture(backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let ids = { (objects: [ManagedObject]) in objects.map { $0.id!.stringValue! }.sorted() }
            let people = Dictionary(uniqueKeysWithValues: try context.fetch("Photographer").map { ($0.id!.stringValue!, $0) })
            let photos = Dictionary(uniqueKeysWithValues: try context.fetch("Photo").map { ($0.id!.stringValue!, $0) })
            let dee = context.insert("Photographer"); dee.id = "dee"
            let p5 = insertPhoto(context, id: "p5"); p5.setObject(dee, forKey: "whoTook")
            photos["p3"]!.setObject(people["ana"], forKey: "whoTook")
            let byDeeBeforeSave = try QueryPredicate(format: "whoTook == %@", dee)
            #expect(ids(try context.fetch(FetchRequest("Photo", predicate: byDeeBeforeSave))) == ["p5"])
            #expect(ids(try context.fetch(FetchRequest("Photo", predicate: try QueryPredicate(format: "whoTook == %@", people["ana"]!)))) == ["p1", "p2", "p3"])
            #expect(ids(try context.fetch(FetchRequest("Photo", predicate: try QueryPredicate(format: "whoTook == %@", people["bo"]!)))) == [])
            #expect(ids(try context.fetch(FetchRequest("Photo", predicate: try QueryPredicate(format: "whoTook IN %@", [dee, people["bo"]!])))) == ["p5"])
            try context.save()
            // Made again after the save, the predicate names dee's row; the one made before names nothing stored.
            #expect(try Self.selected(context, "Photo", QueryPredicate(format: "whoTook == %@", dee)) == ["p5"])
            #expect(try Self.selected(context, "Photo", byDeeBeforeSave) == [])
        }
    }

    @Test(arguments: StoreBackend.available) func anObjectOfAnotherStoreMatchesNothing(backend: StoreBackend) throws {
        let (coordinator, directory) = try Self.fixture(backend)
        defer { withExtendedLifetime(directory) {} }
        let (otherStore, otherDirectory) = try TestModel.store(on: .memory)
        _ = otherDirectory
        let other = ObjectContext(coordinator: otherStore)
        let stranger: ObjectID = try other.performAndWait {
            let p = other.insert("Photographer"); p.id = "ana"
            try other.save()
            return p.objectID
        }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let ana = try context.fetch(FetchRequest("Photographer", predicate: QueryPredicate(format: "id == %@", "ana")))[0]
            #expect(stranger.primaryKey == ana.objectID.primaryKey)  // the same row number, in another store
            #expect(try Self.selected(context, "Photo", QueryPredicate(format: "whoTook == %@", stranger)) == [])
            #expect(try Self.selected(context, "Photo", QueryPredicate(format: "whoTook != %@", stranger)) == ["p1", "p2", "p3", "p4"])
        }
    }

    @Test(arguments: StoreBackend.available) func objectsCompareOnlyWithAToOneRelationshipToTheirEntity(backend: StoreBackend) throws {
        let (coordinator, directory) = try Self.fixture(backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let ana = try context.fetch(FetchRequest("Photographer", predicate: QueryPredicate(format: "id == %@", "ana")))[0]
            let p1 = try context.fetch(FetchRequest("Photo", predicate: QueryPredicate(format: "id == %@", "p1")))[0]
            let cases: [(String, (any PredicateArgumentConvertible)?, String)] = [
                ("whoTook == %@", p1, "the relationship leads to Photographer; it cannot be compared with an object of Photo"),
                ("title == %@", ana, "an object compares only with a to-one relationship (as in whoTook == %@)"),
                ("whoTook > %@", ana, "a to-one relationship compares with objects by ==, != or IN, not >"),
            ]
            for (format, argument, message) in cases {
                let predicate = try QueryPredicate(format: format, argument)
                #expect(throws: QueryPredicateError(message, column: 0), "SQL: \(format)") { try context.fetch(FetchRequest("Photo", predicate: predicate)) }
                #expect(throws: QueryPredicateError(message, column: 0), "memory: \(format)") { try predicate.evaluate(with: p1) }
            }
        }
    }

    /// A fetched results controller evaluates merged changes in memory: objects whose
    /// photographer changes elsewhere join and leave it.
    @Test(arguments: StoreBackend.available) func aControllerFollowsAPhotographersPhotosAcrossMerges(backend: StoreBackend) throws {
        let (coordinator, directory) = try Self.fixture(backend)
        defer { withExtendedLifetime(directory) {} }
        let viewer = ObjectContext(coordinator: coordinator, name: "viewer")
        let writer = ObjectContext(coordinator: coordinator, name: "writer")
        let notices = Mutex2<[SaveNotice]>([])
        let token = coordinator.addSaveObserver { notice in notices.set(notices.get() + [notice]) }
        defer { coordinator.removeSaveObserver(token) }
        let controller = try viewer.performAndWait { () throws -> FetchedResultsController in
            let ana = try viewer.fetch(FetchRequest("Photographer", predicate: QueryPredicate(format: "id == %@", "ana")))[0]
            let request = FetchRequest("Photo", predicate: try QueryPredicate(format: "whoTook == %@", ana),
                                       sortDescriptors: [FetchSortDescriptor("id")])
            let controller = try FetchedResultsController(request: request, context: viewer)
            try controller.performFetch()
            return controller
        }
        try writer.performAndWait {
            let people = Dictionary(uniqueKeysWithValues: try writer.fetch("Photographer").map { ($0.id!.stringValue!, $0) })
            let photos = Dictionary(uniqueKeysWithValues: try writer.fetch("Photo").map { ($0.id!.stringValue!, $0) })
            photos["p1"]!.setObject(people["bo"], forKey: "whoTook")
            photos["p3"]!.setObject(people["ana"], forKey: "whoTook")
            insertPhoto(writer, id: "p5").setObject(people["ana"], forKey: "whoTook")
            try writer.save()
        }
        viewer.performAndWait {
            #expect(controller.fetchedObjects.map { $0.id!.stringValue! } == ["p1", "p2"])
            for notice in notices.get() { viewer.mergeChanges(fromDidSave: notice) }
            #expect(controller.fetchedObjects.map { $0.id!.stringValue! } == ["p2", "p3", "p5"])
        }
    }
}
