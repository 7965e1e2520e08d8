import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// Decimals in stores are numbers: sorted, compared and kept by number on SQLite and
/// PostgreSQL, in SQL exactly as in memory, at any precision.
@Suite struct DecimalStoreTests {
    static let thirty = DecimalTextTests.thirty

    static let model = Model(entities: [
        Entity("Reading", attributes: [
            Attribute("id", .string, optional: false),
            Attribute("v", .decimal),
            Attribute("w", .decimal, indexed: true),
        ], uniquenessConstraints: [["id"]]),
    ])

    /// Readings whose `v` and `w` are written as a feed might write them.
    static let written: [(id: String, value: String?)] = [("a", "10.50"), ("b", "+9.250"), ("c", "1E2"), ("d", "-1.000"), ("e", thirty), ("f", nil)]

    static func fixture(_ backend: StoreBackend) throws -> (PersistentStoreCoordinator, TemporaryDirectory) {
        let (coordinator, directory) = try TestModel.store(model, on: backend)
        let context = ObjectContext(coordinator: coordinator, name: "fixture")
        try context.performAndWait {
            for (id, value) in written {
                let reading = context.insert("Reading")
                reading.id = .string(id)
                reading.v = value.map(Value.decimal)
                reading.w = value.map(Value.decimal)
            }
            try context.save()
        }
        return (coordinator, directory)
    }

    @Test(arguments: StoreBackend.available)
    func decimalsSortByNumberInSQLAsInMemory(backend: StoreBackend) throws {
        let (coordinator, directory) = try Self.fixture(backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "check")
        try context.performAndWait {
            for key in ["v", "w"] {
                for ascending in [true, false] {
                    let order = [FetchSortDescriptor(key, ascending: ascending)]
                    let viaSQL = try context.fetch(FetchRequest("Reading", sortDescriptors: order)).map { $0[key]?.decimalText ?? "nil" }
                    let expected = ["nil", "-1", "9.25", "10.5", "100", Self.thirty]
                    #expect(viaSQL == (ascending ? expected : expected.reversed()), "\(key) ascending: \(ascending)")
                    let inMemory = try context.fetch("Reading").sorted { FetchSortDescriptor.ordered($0, before: $1, by: order) }
                    #expect(inMemory.map { $0[key]?.decimalText ?? "nil" } == viaSQL)
                }
            }
            let extremes = try context.fetchDictionaries(DictionaryFetch(FetchRequest("Reading"), properties: [
                .aggregate(name: "least", function: .min, keyPath: "v"), .aggregate(name: "most", function: .max, keyPath: "w"),
            ]))
            #expect(extremes.first?["least"] == .decimal("-1") && extremes.first?["most"] == .decimal(Self.thirty), "\(extremes)")
        }
    }

    /// Comparisons with numbers (integers, doubles, decimal text, literals past a double's
    /// precision), text searches on the canonical text, and each side of the operator.
    static let predicates: [(String, [String])] = [
        ("v > 9", ["a", "b", "c", "e"]), ("v > '9'", ["a", "b", "c", "e"]), ("9 < v", ["a", "b", "c", "e"]), ("w > 9", ["a", "b", "c", "e"]),
        ("v > 9.25", ["a", "c", "e"]), ("v >= 9.25", ["a", "b", "c", "e"]), ("v >= 100", ["c", "e"]), ("100 >= w", ["a", "b", "c", "d"]),
        ("v == 100", ["c"]), ("v == 1e2", ["c"]), ("w == '100.00'", ["c"]), ("v != 100", ["a", "b", "d", "e", "f"]),
        ("v < 0", ["d"]), ("v < -0.5", ["d"]), ("v BETWEEN {0, 50}", ["a", "b"]), ("w BETWEEN {9.25, 10.5}", ["a", "b"]),
        ("v IN {9.25, 100, 7}", ["b", "c"]), ("w IN {'10.5', -1}", ["a", "d"]), ("NOT v > 9", ["d", "f"]), ("v = nil", ["f"]),
        ("v == 123456789012345678901234567890", ["e"]), ("w > 123456789012345678901234567889", ["e"]),
        ("v < 123456789012345678901234567891 AND v > 100", ["e"]), ("v > 1.2345678901234568e29", []),
        ("v BEGINSWITH '1'", ["a", "c", "e"]), ("w CONTAINS '.'", ["a", "b"]), ("v LIKE '*.5'", ["a"]), ("v ENDSWITH '0'", ["c", "e"]),
        ("v > w", []), ("v >= w", ["a", "b", "c", "d", "e"]),
    ]

    @Test(arguments: StoreBackend.available)
    func decimalComparisonsSelectByNumberInSQLAsInMemory(backend: StoreBackend) throws {
        let (coordinator, directory) = try Self.fixture(backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "check")
        for (format, expected) in Self.predicates {
            do {
                let predicate = try QueryPredicate(format: format)
                let (viaSQL, inMemory, counted) = try context.performAndWait {
                    (try context.fetch(FetchRequest("Reading", predicate: predicate)).compactMap { $0.id?.stringValue }.sorted(),
                     try context.fetch("Reading").filter { try predicate.evaluate(with: $0) }.compactMap { $0.id?.stringValue }.sorted(),
                     try context.count(for: FetchRequest("Reading", predicate: predicate)))
                }
                #expect(viaSQL == expected, "SQL: \(format)")
                #expect(inMemory == expected, "in memory: \(format)")
                #expect(counted == expected.count, "count: \(format)")
            } catch {
                Issue.record("\(format): \(error)")
            }
        }
        // Built in Swift, with a decimal value: exact as well.
        let exact = QueryPredicate.comparison(PredicateComparison(.keyPath(["v"]), .greater, .value(.decimal("123456789012345678901234567889.99"))))
        let found = try context.performAndWait { try context.fetch(FetchRequest("Reading", predicate: exact)).compactMap { $0.id?.stringValue } }
        #expect(found == ["e"])
        // Text that is no number is refused, as other mismatched kinds are.
        #expect(throws: QueryPredicateError.self) {
            try context.performAndWait { try context.fetch(FetchRequest("Reading", predicate: try QueryPredicate(format: "v > 'many'"))) }
        }
    }

    @Test(arguments: StoreBackend.available)
    func decimalsRoundTripExactlyInTheirCanonicalForm(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(Self.model, on: backend)
        defer { withExtendedLifetime(directory) {} }
        let cases = [(Self.thirty, Self.thirty), ("0.1", "0.1"), ("-" + Self.thirty + ".000000000000000000000000000001", "-" + Self.thirty + ".000000000000000000000000000001"),
                     ("1e-30", "0." + String(repeating: "0", count: 29) + "1"), ("7.800000", "7.8"), ("+7.80", "7.8"), ("78e-1", "7.8"),
                     ("1E+3", "1000"), ("-0", "0"), ("0.000", "0"), ("1e400", "1" + String(repeating: "0", count: 400))]
        let writer = ObjectContext(coordinator: coordinator, name: "writer")
        try writer.performAndWait {
            for (index, (written, canonical)) in cases.enumerated() {
                let reading = writer.insert("Reading")
                reading.id = .string("r\(index)")
                reading.v = .decimal(written)
                #expect(reading.v == .decimal(canonical), "set \(written)")
            }
            try writer.save()
            // The same number written another way changes nothing.
            let stored = try writer.fetch(FetchRequest("Reading", predicate: try QueryPredicate(format: "id == 'r4'"))).first!
            stored.v = .decimal("7.8000")
            #expect(!stored.hasChanges)
        }
        let reader = ObjectContext(coordinator: coordinator, name: "reader")
        try reader.performAndWait {
            let values = Dictionary(uniqueKeysWithValues: try reader.fetch("Reading").map { ($0.id!.stringValue!, $0.v) })
            for (index, (written, canonical)) in cases.enumerated() { #expect(values["r\(index)"] == .decimal(canonical), "\(written)") }
            let rows = try reader.fetchDictionaries(DictionaryFetch(FetchRequest("Reading", predicate: try QueryPredicate(format: "id == 'r0'")),
                                                                   properties: [.keyPath("v")]))
            #expect(rows.first?["v"] == .decimal(Self.thirty))
        }
        // Text that is no decimal is refused at the save, naming the object.
        writer.performAndWait {
            let bad = writer.insert("Reading")
            bad.id = .string("bad")
            bad.v = .decimal("7,8")
            #expect(throws: StoreError.self) { try writer.save() }
            writer.rollback()
        }
    }

    // MARK: - Stores of an earlier Ingest

    /// A store made when decimals were text kept as written (format 1): opening it for
    /// writing makes them canonical and their index ordered by number; a reader's open
    /// does so once through a writer of its own.
    @Test(arguments: [false, true])
    func aFormatOneStoreHasItsDecimalsMadeNumbersWhenOpened(readOnly: Bool) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("store.sqlite")
        try Self.writeFormatOneStore(path, readings: [("a", "10.50"), ("b", "9.250000"), ("c", "1E2"), ("d", "-1.0"), ("e", Self.thirty)])
        let coordinator = readOnly ? try PersistentStoreCoordinator(existingStoreAt: path, readOnly: true)
            : try PersistentStoreCoordinator(model: Self.model, path: path)
        let context = ObjectContext(coordinator: coordinator, name: "check")
        try context.performAndWait {
            let sorted = try context.fetch(FetchRequest("Reading", predicate: try QueryPredicate(format: "w > 9"), sortDescriptors: [FetchSortDescriptor("w")]))
            #expect(sorted.map { $0.w?.decimalText } == ["9.25", "10.5", "100", Self.thirty])
            #expect(try context.count(for: FetchRequest("Reading", predicate: try QueryPredicate(format: "v == 9.25"))) == 1)
        }
        let db = try SQLiteFile(path, readOnly: true)
        let version = try db.string("SELECT value FROM _ingest_metadata WHERE key = '_formatVersion'")
        let index = try db.string("SELECT sql FROM sqlite_master WHERE name = '_index_Reading_w'")
        #expect(version == "2")
        #expect(index?.contains("COLLATE ingest_decimal") == true, "\(index ?? "no index")")
    }

    /// Two keys that are one number once canonical cannot both stay: the open says so.
    @Test func aFormatOneStoreWithTwoKeysOfOneNumberIsRefusedNamingThem() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("store.sqlite")
        let keyed = Model(entities: [Entity("Price", attributes: [Attribute("amount", .decimal, optional: false)], uniquenessConstraints: [["amount"]])])
        _ = try PersistentStoreCoordinator(model: keyed, path: path)
        try SQLiteFile(path).execute("""
            BEGIN IMMEDIATE;
            INSERT INTO Price (amount) VALUES ('7.8'), ('7.80');
            UPDATE _ingest_metadata SET value = '1' WHERE key = '_formatVersion';
            COMMIT
            """)
        let error = #expect(throws: StoreError.self) { try PersistentStoreCoordinator(model: keyed, path: path) }
        #expect("\(error.map { "\($0)" } ?? "")".contains("Price.amount: two keys are one number written two ways"), "\(String(describing: error))")
    }

    /// A store with no decimal attribute is the same in both formats and stays format 1,
    /// so an earlier Ingest still opens it.
    @Test func aStoreWithoutDecimalsStaysFormatOne() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("store.sqlite")
        _ = try PersistentStoreCoordinator(model: TestModel.model.removingDecimals, path: path)
        let version = try SQLiteFile(path, readOnly: true).string("SELECT value FROM _ingest_metadata WHERE key = '_formatVersion'")
        #expect(version == "1")
    }

    /// A PostgreSQL store whose decimal columns are text (as an earlier Ingest made them)
    /// gets `numeric` columns holding each value canonical on a writer's open.
    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aPostgreSQLStoreWithTextDecimalsHasThemMadeNumbersWhenOpened() throws {
        let url = try StoreBackend.newDatabase()
        _ = try PersistentStoreCoordinator(model: Self.model, url: URL(string: url)!)
        let connection = try PostgresConnection(PostgresURL(url))
        for column in ["v", "w"] { try connection.execute("ALTER TABLE \"Reading\" ALTER COLUMN \"\(column)\" TYPE text COLLATE \"C\"") }
        try connection.execute("""
            INSERT INTO "Reading" (id, v, w) VALUES ('a', '10.50', '10.50'), ('b', '9.250000', '9.250000'), ('c', '1E2', '1E2'),
                ('d', '-1.0', '-1.0'), ('e', '\(Self.thirty)', '\(Self.thirty)')
            """)
        // A reader with SELECT rights only cannot make them numbers: refused, saying why.
        #expect(throws: PostgresError.self) { try PostgresStore(url: PostgresURL(url), model: Self.model, readOnly: true) }
        let coordinator = try PersistentStoreCoordinator(existingStoreAt: url, readOnly: true)
        let context = ObjectContext(coordinator: coordinator, name: "check")
        try context.performAndWait {
            let sorted = try context.fetch(FetchRequest("Reading", predicate: try QueryPredicate(format: "v > 9"), sortDescriptors: [FetchSortDescriptor("w")]))
            #expect(sorted.map { $0.w?.decimalText } == ["9.25", "10.5", "100", Self.thirty])
        }
        #expect(try connection.execute("SELECT data_type FROM information_schema.columns WHERE table_name = 'Reading' AND column_name = 'v'")[0, 0] == "numeric")
        #expect(try connection.execute("SELECT v::text FROM \"Reading\" WHERE id = 'b'")[0, 0] == "9.25")
    }

    /// The batch path's binary COPY sends `numeric`'s binary form, made from canonical
    /// text: the server reads back the same text for edge places and random decimals.
    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func numericsBinaryFormReadsBackAsItsCanonicalText() throws {
        let connection = try PostgresConnection(PostgresURL(try StoreBackend.newDatabase()))
        var generator = SystemRandomNumberGenerator()
        func digits(_ count: Int) -> String { String((0..<count).map { _ in Character(String(Int.random(in: 0...9, using: &generator))) }) }
        var texts = ["0", "1", "-1", "0.1", "0.0001", "0.00001", "9999", "10000", "-10000.0001", "12345678.87654321", Self.thirty,
                     "1" + String(repeating: "0", count: 400), "-0." + String(repeating: "0", count: 399) + "7"]
        for _ in 0..<300 {
            let written = (Bool.random(using: &generator) ? "-" : "") + digits(Int.random(in: 1...40, using: &generator)) + "." + digits(Int.random(in: 0...40, using: &generator))
            texts.append(DecimalText.canonical(written)!)
        }
        for text in texts {
            var bytes = ByteBuffer()
            PostgresBatchWriter.appendNumeric(text, to: &bytes)
            #expect(try connection.execute("SELECT ($1::numeric)::text", [], bytes: bytes.array)[0, 0] == text)
        }
    }

    /// A store as an earlier Ingest left it: decimals as written, a byte-ordered index, format 1.
    static func writeFormatOneStore(_ path: String, readings: [(String, String)]) throws {
        _ = try PersistentStoreCoordinator(model: model, path: path)
        // (Without Ingest's collation, SQLite writes no row to a table whose index needs it.)
        let db = try SQLiteFile(path)
        try db.execute("BEGIN IMMEDIATE; DROP INDEX _index_Reading_w; CREATE INDEX _index_Reading_w ON Reading (w)")
        for (id, value) in readings {
            try db.execute("INSERT INTO Reading (id, v, w) VALUES (?, ?, ?)", [.text(id), .text(value), .text(value)])
        }
        try db.execute("UPDATE _ingest_metadata SET value = '1' WHERE key = '_formatVersion'; COMMIT")
    }
}

extension Model {
    /// The model without its decimal attributes.
    var removingDecimals: Model {
        Model(entities: entities.map { entity in
            var entity = entity
            entity.attributes.removeAll { $0.type == .decimal }
            return entity
        })
    }
}
