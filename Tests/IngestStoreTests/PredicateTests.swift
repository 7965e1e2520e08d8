import IngestTestSupport
import Foundation
import Testing
@testable import IngestStore

@Suite struct PredicateParsingTests {
    @Test func formatsParseToTheExpectedTree() throws {
        #expect(try QueryPredicate(format: "views > 10") == .comparison(PredicateComparison(.keyPath(["views"]), .greater, .value(.int(10)))))
        #expect(try QueryPredicate(format: "whoTook.name ==[cd] %@", "Ana") ==
            .comparison(PredicateComparison(.keyPath(["whoTook", "name"]), .equal, .value(.string("Ana")),
                                   options: [.caseInsensitive, .diacriticInsensitive])))
        #expect(try QueryPredicate(format: "a = 1 OR b = 2 AND NOT c = 3") == .or([
            .comparison(PredicateComparison(.keyPath(["a"]), .equal, .value(.int(1)))),
            .and([.comparison(PredicateComparison(.keyPath(["b"]), .equal, .value(.int(2)))),
                  .not(.comparison(PredicateComparison(.keyPath(["c"]), .equal, .value(.int(3)))))]),
        ]))
        #expect(try QueryPredicate(format: "(a = 1 || b = 2) && !(c <> nil)") == .and([
            .or([.comparison(PredicateComparison(.keyPath(["a"]), .equal, .value(.int(1)))),
                 .comparison(PredicateComparison(.keyPath(["b"]), .equal, .value(.int(2))))]),
            .not(.comparison(PredicateComparison(.keyPath(["c"]), .notEqual, .value(nil)))),
        ]))
        #expect(try QueryPredicate(format: "ANY photos.title BEGINSWITH 'x'") ==
            .comparison(PredicateComparison(.keyPath(["photos", "title"]), .beginsWith, .value(.string("x")), quantifier: .any)))
        #expect(try QueryPredicate(format: "photos.@sum.views >= 5") ==
            .comparison(PredicateComparison(.aggregate(.sum, relationship: ["photos"], attribute: ["views"]), .greaterOrEqual, .value(.int(5)))))
        #expect(try QueryPredicate(format: "views BETWEEN {1, 5}") ==
            .comparison(PredicateComparison(.keyPath(["views"]), .between, .list([.int(1), .int(5)]))))
        #expect(try QueryPredicate(format: "%K IN %@", "title", ["a", "b"]) ==
            .comparison(PredicateComparison(.keyPath(["title"]), .in, .list([.string("a"), .string("b")]))))
        #expect(try QueryPredicate(format: "TRUEPREDICATE") == .constant(true))
        #expect(try QueryPredicate(format: "views > $MIN").substituting(["MIN": 3]) ==
            .comparison(PredicateComparison(.keyPath(["views"]), .greater, .value(.int(3)))))
        #expect(try QueryPredicate(format: "views >= %d AND ratio < %f", 2, 0.5) == .and([
            .comparison(PredicateComparison(.keyPath(["views"]), .greaterOrEqual, .value(.int(2)))),
            .comparison(PredicateComparison(.keyPath(["ratio"]), .less, .value(.double(0.5)))),
        ]))
    }

    @Test(arguments: [
        ("views >", "expected a key path or a value, found the end at column 8"),
        ("views >> 3", "expected a key path or a value, found '>' at column 8"),
        ("title CONTAINS[x] 'a'", "unknown comparison option 'x' (expected c, d or cd) at column 15"),
        ("title = 'open", "unterminated string at column 9"),
        ("views 3", "expected a comparison operator (=, !=, <, <=, >, >=, BETWEEN, IN, BEGINSWITH, ENDSWITH, CONTAINS, LIKE, MATCHES), found the number 3 at column 7"),
        ("(views = 1", "expected ')' to close the parenthesis, found the end at column 11"),
        ("views = 1 views = 2", "expected AND, OR or the end of the predicate, found 'views' at column 11"),
        ("photos.@median > 1", "unknown aggregate '@median' (expected @count, @sum, @avg, @min, @max) at column 8"),
        ("photos.@sum > 1", "@sum needs an attribute after it, as in photos.@sum.views at column 8"),
        ("views BETWEEN {1}", "BETWEEN needs two bounds, as {low, high} at column 7"),
        ("", "empty predicate at column 1"),
        ("views = 1 # 2", "unexpected character '#' at column 11"),
    ])
    func parseErrorsSayWhatWasExpectedWhere(_ format: String, _ message: String) {
        let error = #expect(throws: QueryPredicateError.self) { try QueryPredicate(format: format) }
        #expect(error?.description == message)
    }

    /// Nesting is bounded before the stack is: forty thousand parentheses crashed the
    /// query command (each level recursed through the parser and every walk of the tree).
    @Test func nestingPastTheLimitIsAnErrorNotACrash() throws {
        let limit = PredicateParser.maxNesting
        #expect(try QueryPredicate(format: String(repeating: "(", count: limit) + "views > 1" + String(repeating: ")", count: limit))
                == .comparison(PredicateComparison(.keyPath(["views"]), .greater, .value(.int(1)))))
        for deep in [String(repeating: "(", count: 40_000) + "views > 1" + String(repeating: ")", count: 40_000),
                     String(repeating: "NOT ", count: 40_000) + "views > 1",
                     String(repeating: "(NOT ", count: limit / 2) + "(views > 1" + String(repeating: ")", count: limit / 2 + 1)] {
            let error = #expect(throws: QueryPredicateError.self) { try QueryPredicate(format: deep) }
            #expect(error?.message == "the predicate nests deeper than \(limit) levels of parentheses and NOT")
        }
    }

    @Test func argumentsMustFitTheirSpecifiers() {
        #expect(throws: PredicateArgumentError(.wrongType, position: 1, specifier: "%d", found: "a string", column: 9)) {
            try QueryPredicate(format: "views = %d", "x")
        }
        #expect(throws: PredicateArgumentError(.unused, position: 2)) { try QueryPredicate(format: "views = %@", 1, 2) }
        #expect(throws: QueryPredicateError("no value for variable $X", column: 0)) {
            try QueryPredicate(format: "views = $X").substituting([:])
        }
    }
}

/// Evaluated in memory against a small graph.
@Suite struct PredicateEvaluationTests {
    /// Photographers ana (3 photos), bo (1), cy (none); photos with tags.
    func graph() throws -> (ObjectContext, [String: ManagedObject], PersistentStoreCoordinator, TemporaryDirectory) {
        let (coordinator, directory) = try TestModel.store()
        let context = ObjectContext(coordinator: coordinator, name: "fixture")
        let objects: [String: ManagedObject] = context.performAndWait {
            var objects: [String: ManagedObject] = [:]
            for name in ["ana", "bo", "cy"] {
                let p = context.insert("Photographer"); p.id = .string(name); p.name = .string(name.capitalized)
                objects[name] = p
            }
            let rows: [(String, String?, Int64, String)] = [
                ("p1", "Harbour at dusk", 10, "ana"), ("p2", "Café terrace", 250, "ana"),
                ("p3", "CAFE 50%_off*\\", 40, "ana"), ("p4", nil, 0, "bo"),
            ]
            for (id, title, views, by) in rows {
                let photo = insertPhoto(context, id: id, title: title)
                photo.views = .int(views)
                photo.setObject(objects[by], forKey: "whoTook")
                objects[id] = photo
            }
            let red = context.insert("Tag"); red.name = "red"
            let blue = context.insert("Tag"); blue.name = "blue"
            objects["p1"]!.addObject(red, toKey: "tags")
            objects["p2"]!.addObject(red, toKey: "tags")
            objects["p2"]!.addObject(blue, toKey: "tags")
            return objects
        }
        return (context, objects, coordinator, directory)
    }

    func matching(_ format: String, _ arguments: PredicateArgument..., among keys: [String]) throws -> [String] {
        let (context, objects, _, directory) = try graph()
        defer { withExtendedLifetime(directory) {} }
        let predicate = try QueryPredicate(format: format, arguments: arguments)
        return try context.performAndWait {
            try keys.filter { try predicate.evaluate(with: objects[$0]!) }
        }
    }

    let photos = ["p1", "p2", "p3", "p4"]
    let people = ["ana", "bo", "cy"]

    @Test func comparisonsOnAttributes() throws {
        #expect(try matching("views > 10", among: photos) == ["p2", "p3"])
        #expect(try matching("views >= 10 AND views <= 40", among: photos) == ["p1", "p3"])
        #expect(try matching("views BETWEEN {10, 40}", among: photos) == ["p1", "p3"])
        #expect(try matching("views != 250", among: photos) == ["p1", "p3", "p4"])
        #expect(try matching("views IN %@", [.int(0), .int(250)], among: photos) == ["p2", "p4"])
        #expect(try matching("title = nil", among: photos) == ["p4"])
        #expect(try matching("title != NULL", among: photos) == ["p1", "p2", "p3"])
        #expect(try matching("views < 100.5", among: photos) == ["p1", "p3", "p4"])
    }

    @Test func stringOperatorsAndOptions() throws {
        #expect(try matching("title BEGINSWITH 'Caf'", among: photos) == ["p2"])
        #expect(try matching("title BEGINSWITH[c] 'caf'", among: photos) == ["p2", "p3"])
        #expect(try matching("title BEGINSWITH[cd] 'cafe'", among: photos) == ["p2", "p3"])
        #expect(try matching("title BEGINSWITH[c] 'cafe'", among: photos) == ["p3"])
        #expect(try matching("title ENDSWITH 'dusk'", among: photos) == ["p1"])
        #expect(try matching("title CONTAINS[c] 'AT'", among: photos) == ["p1"])
        #expect(try matching("title ==[cd] 'cafe terrace'", among: photos) == ["p2"])
        #expect(try matching("title LIKE 'H*d?sk'", among: photos) == ["p1"])
        #expect(try matching("title LIKE[c] 'c?f? *'", among: photos) == ["p2", "p3"])
        #expect(try matching("title MATCHES 'H[a-z]+ at .*'", among: photos) == ["p1"])
        #expect(try matching("title MATCHES[c] 'h.*'", among: photos) == ["p1"])
    }

    @Test func argumentsWithWildcardCharactersMatchLiterally() throws {
        #expect(try matching("title CONTAINS %@", "50%_off*\\", among: photos) == ["p3"])
        #expect(try matching("title ENDSWITH %@", "*\\", among: photos) == ["p3"])
        #expect(try matching("title CONTAINS %@", "%", among: photos) == ["p3"])
        #expect(try matching("title CONTAINS %@", "_", among: photos) == ["p3"])
        #expect(try matching("title = %@", "Harbour at dusk", among: photos) == ["p1"])
        #expect(try matching("title LIKE %@", "CAFE 50%_off\\*\\\\", among: photos) == ["p3"])
        #expect(try matching("title = \"q\\\"uote\"", among: photos) == [])
    }

    @Test func keyPathsThroughToOne() throws {
        #expect(try matching("whoTook.name = 'Ana'", among: photos) == ["p1", "p2", "p3"])
        #expect(try matching("whoTook.name BEGINSWITH[c] %@", "b", among: photos) == ["p4"])
        #expect(try matching("%K = %@", "whoTook.id", "bo", among: photos) == ["p4"])
    }

    @Test func quantifiersOverToMany() throws {
        #expect(try matching("ANY photos.views > 100", among: people) == ["ana"])
        #expect(try matching("ALL photos.views > 5", among: people) == ["ana", "cy"])
        #expect(try matching("ALL photos.views >= 0", among: people) == ["ana", "bo", "cy"])
        #expect(try matching("NONE photos.views > 100", among: people) == ["bo", "cy"])
        #expect(try matching("ANY photos.tags.name = 'blue'", among: people) == ["ana"])
        #expect(try matching("SOME tags.name IN {'red'}", among: photos) == ["p1", "p2"])
    }

    @Test func aggregatesOverToMany() throws {
        #expect(try matching("photos.@count > 0", among: people) == ["ana", "bo"])
        #expect(try matching("photos.@count == 0", among: people) == ["cy"])
        #expect(try matching("photos.@sum.views == 300", among: people) == ["ana"])
        #expect(try matching("photos.@sum.views == 0", among: people) == ["bo", "cy"])
        #expect(try matching("photos.@avg.views == 100", among: people) == ["ana"])
        #expect(try matching("photos.@min.views == 10", among: people) == ["ana"])
        #expect(try matching("photos.@max.views > 200", among: people) == ["ana"])
        #expect(try matching("tags.@count == 2", among: photos) == ["p2"])
    }

    @Test func constantsNegationAndComposition() throws {
        #expect(try matching("TRUEPREDICATE", among: photos) == photos)
        #expect(try matching("FALSEPREDICATE", among: photos) == [])
        #expect(try matching("NOT views > 10", among: photos) == ["p1", "p4"])
        let (context, objects, _, directory) = try graph()
        defer { withExtendedLifetime(directory) {} }
        let composed = try QueryPredicate(format: "views > 5") && !(try QueryPredicate(format: "whoTook.id = 'ana'"))
            || QueryPredicate(format: "title = nil")
        let matched = try context.performAndWait { try photos.filter { try composed.evaluate(with: objects[$0]!) } }
        #expect(matched == ["p4"])
    }

    @Test func badKeyPathsAreErrorsNamingTheKey() throws {
        let (context, objects, _, directory) = try graph()
        defer { withExtendedLifetime(directory) {} }
        context.performAndWait {
            let photo = objects["p1"]!
            #expect(throws: QueryPredicateError("entity Photo has no key 'nope'", column: 0)) {
                try QueryPredicate(format: "nope = 1").evaluate(with: photo)
            }
            #expect(throws: QueryPredicateError("a to-many key path is compared without ANY, ALL or NONE", column: 0)) {
                try QueryPredicate(format: "whoTook.photos.views = 1").evaluate(with: photo)
            }
            #expect(throws: QueryPredicateError("MATCHES needs a regular expression; '(' is not one", column: 0)) {
                try QueryPredicate(format: "title MATCHES '('").evaluate(with: photo)
            }
        }
    }
}
