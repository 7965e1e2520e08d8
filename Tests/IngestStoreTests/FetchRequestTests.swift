import IngestTestSupport
import Foundation
import Testing
@testable import IngestStore

/// Every predicate compiled to SQL must select exactly the rows `evaluate(with:)`
/// accepts, on every fixture row.
@Suite struct PredicateAgreementTests {
    static func fixture(_ backend: StoreBackend = .sqlite) throws -> (PersistentStoreCoordinator, TemporaryDirectory) {
        let (coordinator, directory) = try TestModel.store(on: backend)
        let context = ObjectContext(coordinator: coordinator, name: "fixture")
        try context.performAndWait {
            var people: [ManagedObject] = []
            for (id, name) in [("ana", "Ana Silva"), ("bo", "Bo Öberg"), ("cy", nil), ("dee", "dee"), ("eve", "ÉVE")] as [(String, String?)] {
                let p = context.insert("Photographer"); p.id = .string(id)
                if let name { p.name = .string(name) }
                people.append(p)
            }
            let tags = ["red", "Blue", "grün", "100%_off", "a*b\\c"].map { name -> ManagedObject in
                let tag = context.insert("Tag"); tag.name = .string(name); return tag
            }
            let titles: [String?] = ["Harbour at dusk", "Café terrace", "CAFE 50%_off*\\", nil, "café", "Zebra",
                                     "o'clock \"quoted\"", "", "日本の夏", "harbour", "Ünïcode Ümlaut", "x?y*z"]
            for (i, title) in titles.enumerated() {
                let photo = insertPhoto(context, id: String(format: "p%02d", i), title: title)
                photo.views = i % 4 == 3 ? nil : .int(Int64(i * 37 % 101))
                if i % 5 != 4 { photo.setObject(people[i % 5], forKey: "whoTook") }
                for (k, tag) in tags.enumerated() where (i + k) % 3 == 0 { photo.addObject(tag, toKey: "tags") }
            }
            try context.save()
        }
        return (coordinator, directory)
    }

    static let photoPredicates: [String] = [
        "views > 40", "views >= 37", "views < 10", "views <= 0", "views == 74", "views != 74", "views = nil", "views != nil",
        "views BETWEEN {10, 80}", "views IN {0, 74, 999}", "views IN {0, nil}", "NOT views > 40", "views > 40 OR title = nil",
        "title = 'café'", "title ==[c] 'CAFÉ'", "title ==[cd] 'cafe'", "title !=[cd] 'cafe'", "title < 'c'", "title >=[c] 'h'",
        "title BEGINSWITH 'Caf'", "title BEGINSWITH[c] 'caf'", "title BEGINSWITH[cd] 'cafe'", "title BEGINSWITH ''",
        "title ENDSWITH 'dusk'", "title ENDSWITH[cd] 'LAUT'", "title ENDSWITH ''", "title CONTAINS 'a'", "title CONTAINS[c] 'A'",
        "title CONTAINS[d] 'u'", "title CONTAINS '%_'", "title CONTAINS '*\\\\'", "title CONTAINS \"'\"", "title CONTAINS '\\\"'",
        "title LIKE '*a*'", "title LIKE[c] 'h*'", "title LIKE '?a*'", "title LIKE 'x\\\\?y*'", "title LIKE[cd] 'cafe'",
        "title MATCHES '[A-Z].*'", "title MATCHES[c] 'h.*r'", "title MATCHES '\\\\w+'", "title MATCHES[cd] '.*[[:alpha:]]{4}.*'", "title IN {'Zebra', 'harbour', nil}", "title IN[c] {'zebra'}",
        "whoTook.name = 'Ana Silva'", "whoTook.name BEGINSWITH[cd] 'bo o'", "whoTook.name = nil", "whoTook = nil", "whoTook != nil",
        "whoTook.id IN {'ana', 'dee'} AND views > 20", "ANY tags.name = 'red'", "ANY tags.name BEGINSWITH[c] 'b'",
        "ALL tags.name CONTAINS 'r'", "NONE tags.name = 'red'", "ANY tags.name LIKE '*\\\\*'", "tags.@count == 0",
        "tags.@count >= 2", "NOT (ANY tags.name = 'red' OR views < 20)", "TRUEPREDICATE", "FALSEPREDICATE",
        "ANY whoTook.name = 'Ana Silva'", "NONE whoTook.id = 'ana'",
        "whoTook.name = 'Ana Silva' OR views > 40", "NOT whoTook.name = 'Ana Silva'", "whoTook.name != 'Ana Silva'",
        "whoTook.name IN {'Ana Silva', nil}", "whoTook.name = 'Ana Silva' AND whoTook.name != nil", "whoTook.name > 'B' AND NOT (whoTook.id = 'bo')",
    ]

    static let photographerPredicates: [String] = [
        "photos.@count > 2", "photos.@count == 0", "photos.@sum.views > 100", "photos.@sum.views == 0", "photos.@avg.views > 40",
        "photos.@min.views < 10", "photos.@max.views >= 74", "ANY photos.views > 90", "ALL photos.views > 10",
        "NONE photos.title CONTAINS[c] 'caf'", "ANY photos.tags.name = 'grün'", "ALL photos.tags.name != 'red'", "NONE photos.tags.name BEGINSWITH 'a'",
        "name ==[cd] 'eve'", "name = nil", "ANY photos.title = nil", "ALL photos.title != nil",
    ]

    func agree(_ coordinator: PersistentStoreCoordinator, entity: String, _ format: String) throws {
        let predicate = try QueryPredicate(format: format)
        let context = ObjectContext(coordinator: coordinator, name: "check")
        let (viaSQL, inMemory, total): ([String], [String], Int) = try context.performAndWait {
            let sql = try context.fetch(FetchRequest(entity, predicate: predicate)).map(\.objectID.uri)
            let all = try context.fetch(entity)
            let memory = try all.filter { try predicate.evaluate(with: $0) }.map(\.objectID.uri)
            let counted = try context.count(for: FetchRequest(entity, predicate: predicate))
            #expect(counted == sql.count, "count(for:) of \(format)")
            return (sql, memory, all.count)
        }
        #expect(viaSQL == inMemory, "\(entity): \(format)")
        #expect(total > 0)
    }

    @Test(arguments: StoreBackend.available) func photoPredicatesAgreeInSQLAndInMemory(backend: StoreBackend) throws {
        let (coordinator, directory) = try Self.fixture(backend)
        defer { withExtendedLifetime(directory) {} }
        for format in Self.photoPredicates {
            do { try agree(coordinator, entity: "Photo", format) } catch { Issue.record("\(format): \(error)") }
        }
    }

    /// Found by probing: SQLite handed text to the predicate functions cut at a NUL, and its
    /// length() stops there, so `==[c] 'a'` matched "a\u{0}b" and `ENDSWITH '\u{0}c'` every
    /// row. (PostgreSQL text holds no NUL: such records are rejected.)
    @Test func textWithNULCharactersComparesWholeInSQLAsInMemory() throws {
        let (coordinator, directory) = try TestModel.store(on: .sqlite)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "fixture")
        try context.performAndWait {
            for (i, title) in ["a\u{0}b", "A\u{0}C", "a", "zzz", "\u{0}"].enumerated() { _ = insertPhoto(context, id: "n\(i)", title: title) }
            try context.save()
        }
        let cases: [(String, PredicateArgument, [String])] = [
            ("title ==[c] %@", "a", ["n2"]), ("title ==[c] %@", "A\u{0}b", ["n0"]), ("title ==[cd] %@", "a\u{0}c", ["n1"]),
            ("title CONTAINS[c] %@", "\u{0}", ["n0", "n1", "n4"]), ("title CONTAINS %@", "\u{0}c", []),
            ("title ENDSWITH %@", "\u{0}b", ["n0"]), ("title ENDSWITH[d] %@", "\u{0}C", ["n1"]), ("title ENDSWITH[c] %@", "\u{0}c", ["n1"]),
            ("title BEGINSWITH[c] %@", "a\u{0}", ["n0", "n1"]), ("title LIKE[c] %@", "a?c", ["n1"]), ("title MATCHES[c] %@", "a.b", ["n0"]),
        ]
        for (format, argument, expected) in cases {
            let predicate = try QueryPredicate(format: format, arguments: [argument])
            let (viaSQL, inMemory): ([String], [String]) = try context.performAndWait {
                let sql = try context.fetch(FetchRequest("Photo", predicate: predicate)).compactMap { $0.id?.stringValue }.sorted()
                let memory = try context.fetch("Photo").filter { try predicate.evaluate(with: $0) }.compactMap { $0.id?.stringValue }.sorted()
                return (sql, memory)
            }
            #expect(viaSQL == expected, "SQL: \(format) with \(argument)")
            #expect(inMemory == expected, "in memory: \(format) with \(argument)")
        }
    }

    @Test(arguments: StoreBackend.available) func photographerPredicatesAgreeInSQLAndInMemory(backend: StoreBackend) throws {
        let (coordinator, directory) = try Self.fixture(backend)
        defer { withExtendedLifetime(directory) {} }
        for format in Self.photographerPredicates {
            do { try agree(coordinator, entity: "Photographer", format) } catch { Issue.record("\(format): \(error)") }
        }
    }

    @Test(arguments: StoreBackend.available) func argumentsAreBoundNeverSpliced(backend: StoreBackend) throws {
        let (coordinator, directory) = try Self.fixture(backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            for hostile in ["x' OR 1=1 --", "%", "_", "*", "\\", "\"", "'); DROP TABLE \"Photo\"; --"] {
                let request = FetchRequest("Photo", predicate: try QueryPredicate(format: "title = %@ OR title CONTAINS %@", hostile, hostile))
                let expected = try context.fetch("Photo").filter { photo in
                    guard let title = photo.title?.stringValue else { return false }
                    return title == hostile || title.contains(hostile)
                }
                #expect(Set(try context.fetch(request)) == Set(expected), "\(hostile)")
            }
        }
        #expect(try coordinator.count("Photo") == 12)
    }
}

@Suite struct FetchRequestTests {
    @Test(arguments: StoreBackend.available) func sortLimitOffsetAndCount(backend: StoreBackend) throws {
        let (coordinator, directory) = try PredicateAgreementTests.fixture(backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let byViews = FetchRequest("Photo", predicate: try QueryPredicate(format: "views != nil"),
                                       sortDescriptors: [FetchSortDescriptor("views", ascending: false)])
            let views = try context.fetch(byViews).compactMap { $0.views?.intValue }
            #expect(views == views.sorted(by: >))
            #expect(views.count == 9)
            var window = byViews
            window.fetchOffset = 2
            window.fetchLimit = 3
            #expect(try context.fetch(window).compactMap { $0.views?.intValue } == Array(views[2..<5]))
            #expect(try context.count(for: window) == 3)
            let byName = FetchRequest("Photo", predicate: try QueryPredicate(format: "whoTook != nil"),
                                      sortDescriptors: [FetchSortDescriptor("whoTook.name", comparison: .caseInsensitive),
                                                        FetchSortDescriptor("id", ascending: false)])
            let names = try context.fetch(byName).map { $0.object(forKey: "whoTook")?.name?.stringValue ?? "-" }
            #expect(names.first == "-" || names.first == "Ana Silva")
        }
    }

    @Test(arguments: StoreBackend.available) func pendingChangesAreIncluded(backend: StoreBackend) throws {
        let (coordinator, directory) = try PredicateAgreementTests.fixture(backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let request = FetchRequest("Photo", predicate: try QueryPredicate(format: "title BEGINSWITH[c] 'harbour'"),
                                       sortDescriptors: [FetchSortDescriptor("id")])
            #expect(try context.fetch(request).map { $0.id } == ["p00", "p09"])
            insertPhoto(context, id: "new", title: "HARBOUR lights")
            let p09 = try #require(try context.fetch("Photo", where: "id", equals: "p09").first)
            p09.title = "renamed"
            #expect(try context.fetch(request).map { $0.id } == ["new", "p00"])
            #expect(try context.count(for: request) == 2)
            var excluding = request
            excluding.includesPendingChanges = false
            #expect(try context.fetch(excluding).count == 2)
        }
    }
}

@Suite struct DictionaryFetchTests {
    @Test(arguments: StoreBackend.available) func propertiesThroughToOneAndObjectIDs(backend: StoreBackend) throws {
        let (coordinator, directory) = try PredicateAgreementTests.fixture(backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let request = FetchRequest("Photo", predicate: try QueryPredicate(format: "id IN {'p00', 'p01'}"),
                                       sortDescriptors: [FetchSortDescriptor("id")])
            let rows = try context.fetchDictionaries(DictionaryFetch(request, properties: [.keyPath("id"), .keyPath("whoTook.name"), .keyPath("views")]))
            #expect(rows.count == 2)
            #expect(rows[0]["id"] == .string("p00") && rows[0]["whoTook.name"] == .string("Ana Silva") && rows[0]["views"] == .int(0))
            #expect(rows[1]["id"] == .string("p01") && rows[1]["whoTook.name"] == .string("Bo Öberg") && rows[1]["views"] == .int(37))
            #expect(try context.fetchObjectIDs(request) == (try context.fetch(request)).map(\.objectID))
        }
    }

    @Test(arguments: StoreBackend.available) func aggregatesGroupedWithHaving(backend: StoreBackend) throws {
        let (coordinator, directory) = try PredicateAgreementTests.fixture(backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            // The expected figures, computed from the objects themselves.
            var expected: [String: (count: Int, sum: Int64, min: Int64?, max: Int64?, valued: Int)] = [:]
            for photo in try context.fetch("Photo") {
                let who = photo.object(forKey: "whoTook")?.id?.stringValue ?? "-"
                var entry = expected[who] ?? (0, 0, nil, nil, 0)
                entry.count += 1
                if let views = photo.views?.intValue {
                    entry.sum += views
                    entry.valued += 1
                    entry.min = Swift.min(entry.min ?? views, views)
                    entry.max = Swift.max(entry.max ?? views, views)
                }
                expected[who] = entry
            }
            let fetch = DictionaryFetch(
                FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("whoTook.id")]),
                properties: [.keyPath("whoTook.id"), .aggregate(name: "n", function: .count, keyPath: nil),
                             .aggregate(name: "total", function: .sum, keyPath: "views"),
                             .aggregate(name: "least", function: .min, keyPath: "views"),
                             .aggregate(name: "most", function: .max, keyPath: "views"),
                             .aggregate(name: "mean", function: .avg, keyPath: "views")],
                groupBy: ["whoTook.id"])
            let rows = try context.fetchDictionaries(fetch)
            #expect(rows.count == expected.count)
            for row in rows {
                let who = row["whoTook.id"]??.stringValue ?? "-"
                let e = try #require(expected[who])
                #expect(row["n"] == .int(Int64(e.count)), "\(who)")
                #expect(row["total"] == .int(e.sum), "\(who)")
                #expect(row["least"] == e.min.map(Value.int), "\(who)")
                #expect(row["most"] == e.max.map(Value.int), "\(who)")
                #expect(row["mean"] == (e.valued == 0 ? nil : .double(Double(e.sum) / Double(e.valued))), "\(who)")
            }
            var having = fetch
            having.having = try QueryPredicate(format: "total > 100 AND n >= 2")
            let filtered = try context.fetchDictionaries(having).compactMap { $0["whoTook.id"]??.stringValue }
            #expect(filtered == expected.filter { $0.key != "-" && $0.value.sum > 100 && $0.value.count >= 2 }.keys.sorted())
        }
    }

    @Test(arguments: StoreBackend.available) func aggregatesOfBooleansDatesAndOverflowingSums(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        let dates = [752_000_000.0, 752_000_100.0, 752_000_500.0].map(Date.init(timeIntervalSinceReferenceDate:))
        try context.performAndWait {
            for (flag, date) in zip([true, false, true], dates) {
                let row = context.insert("Everything")
                row["a_bool"] = .bool(flag)
                row["a_date"] = .date(date)
                row["a_int64"] = .int(Int64.max / 2 + 1)
            }
            try context.save()
            let properties: [FetchProperty] = [
                .aggregate(name: "anyTrue", function: .max, keyPath: "a_bool"), .aggregate(name: "allTrue", function: .min, keyPath: "a_bool"),
                .aggregate(name: "truths", function: .avg, keyPath: "a_bool"), .aggregate(name: "first", function: .min, keyPath: "a_date"),
                .aggregate(name: "last", function: .max, keyPath: "a_date"), .aggregate(name: "middle", function: .avg, keyPath: "a_date"),
            ]
            let rows = try context.fetchDictionaries(DictionaryFetch(FetchRequest("Everything"), properties: properties))
            #expect(rows.count == 1)
            #expect(rows.first?["anyTrue"] == .bool(true) && rows.first?["allTrue"] == .bool(false))
            #expect(rows.first?["truths"] == .double(2.0 / 3.0))
            #expect(rows.first?["first"] == .date(dates[0]) && rows.first?["last"] == .date(dates[2]))
            #expect(rows.first?["middle"] == .double(752_000_200))
            #expect(try context.count(for: FetchRequest("Photographer")) == 0)
            // Three halves of Int64.max do not fit an Int64: an error on both, never a wrong number.
            let overflow = #expect(throws: StoreError.self) {
                try context.fetchDictionaries(DictionaryFetch(FetchRequest("Everything"), properties: [.aggregate(name: "s", function: .sum, keyPath: "a_int64")]))
            }
            let said = backend.speaksSQLite ? "SQLite: integer overflow" : "PostgreSQL: bigint out of range (SQLSTATE 22003)"
            #expect(overflow.map { "\($0)".hasPrefix(said) } == true, "\(overflow.map { "\($0)" } ?? "")")
        }
    }
}

@Suite struct BatchingAndPrefetchingTests {
    func store(photos: Int, on backend: StoreBackend) throws -> (PersistentStoreCoordinator, TemporaryDirectory) {
        let (coordinator, directory) = try TestModel.store(on: backend)
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let people = (0..<10).map { i -> ManagedObject in
                let p = context.insert("Photographer"); p.id = .string("ph\(i)"); p.name = .string("Name \(i)"); return p
            }
            for i in 0..<photos {
                let photo = insertPhoto(context, id: String(format: "p%04d", i), title: "t\(i)")
                photo.setObject(people[i % 10], forKey: "whoTook")
            }
            try context.save()
        }
        return (coordinator, directory)
    }

    @Test(arguments: StoreBackend.available) func aBatchedFetchReadsOnlyTheBatchesTouched(backend: StoreBackend) throws {
        let (coordinator, directory) = try store(photos: 100, on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            var request = FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("id")])
            request.fetchBatchSize = 10
            let results = try context.fetchResults(request)
            #expect(results.count == 100)
            let before = context.rowQueries
            #expect(results.loadedBatchCount == 0)
            #expect(results[0].id == "p0000")
            #expect(results[5].title == "t5")
            #expect(results[55].id == "p0055")
            #expect(results.loadedBatchCount == 2)
            #expect(context.rowQueries - before == 2)
            #expect(results.last?.id == "p0099")
            #expect(context.rowQueries - before == 3)
        }
    }

    @Test(arguments: StoreBackend.available) func prefetchingIssuesOneQueryPerKeyPath(backend: StoreBackend) throws {
        let (coordinator, directory) = try store(photos: 60, on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            var request = FetchRequest("Photo")
            request.relationshipKeyPathsForPrefetching = ["whoTook"]
            let before = context.rowQueries
            let photos = try context.fetch(request)
            let names = Set(photos.compactMap { $0.object(forKey: "whoTook")?.name?.stringValue })
            #expect(names.count == 10)
            #expect(context.rowQueries - before == 2, "one for the photos, one for their photographers")

            context.reset()
            var people = FetchRequest("Photographer")
            people.relationshipKeyPathsForPrefetching = ["photos"]
            let start = context.rowQueries
            let photographers = try context.fetch(people)
            let titles = photographers.flatMap { $0.objects(forKey: "photos").compactMap { $0.title?.stringValue } }
            #expect(titles.count == 60)
            #expect(context.rowQueries - start == 2, "one for the photographers, one for all their photos")

            context.reset()
            let withoutPrefetch = context.rowQueries
            let plain = try context.fetch(FetchRequest("Photographer"))
            _ = plain.flatMap { $0.objects(forKey: "photos").compactMap { $0.title } }
            #expect(context.rowQueries - withoutPrefetch == 1 + 10 + 60, "without prefetching: one per photographer and per photo")
        }
    }
}

@Suite struct SortAgreementTests {
    static let cases = StoreBackend.available.flatMap { backend in
        [FetchSortDescriptor.Comparison.binary, .caseInsensitive, .localizedStandard].flatMap { comparison in
            [true, false].map { (comparison, $0, backend) }
        }
    }

    @Test(arguments: cases)
    func sqlAndInMemoryOrdersAgree(_ comparison: FetchSortDescriptor.Comparison, _ ascending: Bool, _ backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            for (i, title) in (["file 10", "file 2", "File 1", "éclair", "Eclair", "zebra", "Zebra", "b", nil, "10", "9"] as [String?]).enumerated() {
                insertPhoto(context, id: "p\(i)", title: title)
            }
            try context.save()
            context.reset()
            let descriptors = [FetchSortDescriptor("title", ascending: ascending, comparison: comparison)]
            let viaSQL = try context.fetch(FetchRequest("Photo", sortDescriptors: descriptors)).map(\.objectID)
            let inMemory = try context.fetch("Photo").sorted { FetchSortDescriptor.ordered($0, before: $1, by: descriptors) }.map(\.objectID)
            #expect(viaSQL == inMemory)
            // On a number the comparison is about text only: it sorts by value.
            let byViews = [FetchSortDescriptor("views", ascending: ascending, comparison: comparison)]
            let viewsViaSQL = try context.fetch(FetchRequest("Photo", sortDescriptors: byViews)).map(\.objectID)
            #expect(viewsViaSQL == (try context.fetch("Photo").sorted { FetchSortDescriptor.ordered($0, before: $1, by: byViews) }.map(\.objectID)))
            if comparison == .localizedStandard && ascending {
                let titles = try context.fetch(FetchRequest("Photo", sortDescriptors: descriptors)).map { $0.title?.stringValue ?? "nil" }
                #expect(titles.firstIndex(of: "file 2")! < titles.firstIndex(of: "file 10")!)
                #expect(titles.first == "nil")
            }
        }
    }
}

@Suite struct UnknownEntityFetchTests {
    /// A fetch of an entity the model does not have throws `StoreError.unknownEntity`, as
    /// every fetching call says it throws, instead of trapping.
    @Test(arguments: StoreBackend.available) func fetchingAnUnknownEntityThrowsInsteadOfTrapping(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        context.performAndWait {
            let request = FetchRequest("Photoo")
            let calls: [() throws -> Void] = [
                { _ = try context.fetch("Photoo") },
                { _ = try context.fetch("Photoo", where: "id", equals: nil) },
                { _ = try context.count("Photoo") },
                { _ = try context.fetch(request) },
                { _ = try context.count(for: request) },
                { _ = try context.fetchObjectIDs(request) },
                { _ = try context.fetchResults(request) },
                { _ = try context.fetchDictionaries(DictionaryFetch(request, properties: [.keyPath("id")])) },
                { try FetchedResultsController(request: FetchRequest("Photoo", sortDescriptors: [FetchSortDescriptor("id")]), context: context).performFetch() },
            ]
            for call in calls {
                let error = #expect(throws: StoreError.self) { try call() }
                #expect(error == .unknownEntity("Photoo"))
                #expect(error?.localizedDescription == "the model has no entity 'Photoo'")
            }
        }
    }
}
