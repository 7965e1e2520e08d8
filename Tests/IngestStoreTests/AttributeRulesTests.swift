import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// Attribute value rules (Xcode's minimum, maximum and regular expression): in model JSON,
/// read from Xcode models, checked by every save with one structured problem per value.
@Suite struct AttributeRulesTests {
    static let model = Model(entities: [
        Entity("Person", attributes: [
            Attribute("id", .string, optional: false),
            Attribute("name", .string, rules: AttributeRules(minimumLength: 2, maximumLength: 5, pattern: "[A-Z][a-z]*")),
            Attribute("age", .int64, rules: AttributeRules(minimum: .int(0), maximum: .int(150))),
            Attribute("price", .decimal, rules: AttributeRules(maximum: .decimal("9.99"))),
            Attribute("born", .date, rules: AttributeRules(minimum: .date(Date(timeIntervalSinceReferenceDate: 0)))),
            Attribute("photo", .binary, rules: AttributeRules(maximumLength: 3)),
        ], uniquenessConstraints: [["id"]]),
    ])

    @Test func modelJSONCarriesTheRulesAsPlainValues() throws {
        let json = String(decoding: Self.model.jsonData(), as: UTF8.self)
        #expect(json.contains(#"{"indexed":false,"maxLength":5,"minLength":2,"name":"name","optional":true,"pattern":"[A-Z][a-z]*","type":"string"}"#), "\(json)")
        #expect(json.contains(#"{"indexed":false,"max":150,"min":0,"name":"age","optional":true,"type":"int64"}"#), "\(json)")
        #expect(json.contains(#"{"indexed":false,"max":"9.99","name":"price","optional":true,"type":"decimal"}"#), "\(json)")
        #expect(json.contains(#"{"indexed":false,"min":0,"name":"born","optional":true,"type":"date"}"#), "\(json)")
        #expect(try Model.load(json: Self.model.jsonData(), strict: true) == Self.model)
    }

    @Test func rulesThatDoNotFitTheirAttributeAreRefusedByName() throws {
        let cases: [(Attribute, String)] = [
            (Attribute("flag", .bool, rules: AttributeRules(minimum: .bool(false))),
             "invalid model: rules of Thing.flag: false is not a bool bound (minimum and maximum apply to numbers, dates and decimals)"),
            (Attribute("count", .int64, rules: AttributeRules(maximumLength: 3)),
             "invalid model: rules of Thing.count: minimum and maximum lengths apply to strings and binary data, not to a int64"),
            (Attribute("code", .string, rules: AttributeRules(pattern: "(unclosed")),
             "invalid model: rules of Thing.code: the regular expression (unclosed is not valid"),
            (Attribute("count", .int64, rules: AttributeRules(minimum: .double(1.5))),
             "invalid model: rules of Thing.count: 1.5 is not a int64 bound (minimum and maximum apply to numbers, dates and decimals)"),
        ]
        for (attribute, message) in cases {
            let error = #expect(throws: ModelError.self) { try Model(entities: [Entity("Thing", attributes: [attribute])]).validated() }
            #expect(error?.description == message)
        }
        let json = #"{"entities":[{"name":"Thing","attributes":[{"name":"flag","type":"bool","max":1}]}]}"#
        let error = #expect(throws: ModelError.self) { try Model.load(json: Data(json.utf8)) }
        #expect(error?.description.contains("a bool attribute has no minimum or maximum value (strings and binary data take minLength and maxLength)") == true,
                "\(String(describing: error))")
    }

    @Test func anXcodeModelsTransientAttributesAndValidationRulesAreRead() throws {
        let directory = try TemporaryDirectory()
        let package = URL(fileURLWithPath: directory.file("People.xcdatamodel"))
        try FileManager.default.createDirectory(at: package, withIntermediateDirectories: true)
        try Data("""
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                <entity name="Person" representedClassName="Person" syncable="YES">
                    <attribute name="name" optional="YES" attributeType="String" minValueString="2" maxValueString="5" regularExpressionString="[A-Z][a-z]*"/>
                    <attribute name="age" optional="YES" attributeType="Integer 64" minValueString="0" maxValueString="150" usesScalarValueType="YES"/>
                    <attribute name="born" optional="YES" attributeType="Date" minDateTimeInterval="0" usesScalarValueType="NO"/>
                    <attribute name="nickname" optional="YES" transient="YES" attributeType="String"/>
                </entity>
            </model>
            """.utf8).write(to: package.appendingPathComponent("contents"))
        let model = try Model.load(xcdatamodel: package)
        #expect(model == Model(entities: [Entity("Person", attributes: [
            Attribute("name", .string, rules: AttributeRules(minimumLength: 2, maximumLength: 5, pattern: "[A-Z][a-z]*")),
            Attribute("age", .int64, rules: AttributeRules(minimum: .int(0), maximum: .int(150))),
            Attribute("born", .date, rules: AttributeRules(minimum: .date(Date(timeIntervalSinceReferenceDate: 0)))),
            Attribute("nickname", .string, transient: true),
        ])]))
    }

    @Test(arguments: StoreBackend.available)
    func aSaveNamesEachBrokenRuleWithItsObjectPropertyAndBound(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(Self.model, on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let person = context.insert("Person")
            person.id = "p1"
            person.name = "alexandra"
            person.age = .int(151)
            person.price = .decimal("10")
            person.born = .date(Date(timeIntervalSinceReferenceDate: -1))
            person.photo = .binary([1, 2, 3, 4])
            let error = #expect(throws: StoreError.self) { try context.save() }
            guard case .validation(let problems)? = error else { Issue.record("\(String(describing: error))"); return }
            #expect(problems.map(\.description) == [
                // One problem per value: the first rule it breaks.
                #"Person "p1": name: is 9 characters long, more than the maximum length 5"#,
                #"Person "p1": age: is more than the maximum 150"#,
                #"Person "p1": price: is more than the maximum 9.99"#,
                #"Person "p1": born: is less than the minimum 2001-01-01T00:00:00.000Z"#,
                #"Person "p1": photo: is 4 bytes long, more than the maximum length 3"#,
            ])
            #expect(problems.map(\.rule) == [.maximumLength, .maximum, .maximum, .minimum, .maximumLength])
            #expect(problems[0].entity == "Person" && problems[0].property == "name" && problems[0].key == ["p1"])
            // Within the rules, the save goes through.
            person.name = "Al"
            person.age = .int(0)
            person.price = .decimal("9.99")
            person.born = .date(Date(timeIntervalSinceReferenceDate: 0))
            person.photo = .binary([1, 2, 3])
            try context.save()
            person.name = "Al2"
            #expect(throws: StoreError.validation([#"Person "p1": name: does not match the pattern [A-Z][a-z]*"#])) {
                try context.save()
            }
            person.name = "A"
            #expect(throws: StoreError.validation([#"Person "p1": name: is 1 character long, less than the minimum length 2"#])) {
                try context.save()
            }
        }
    }

    @Test(arguments: StoreBackend.reopenable)
    func changingARuleNeedsNoMigration(backend: StoreBackend) throws {
        let directory = try TemporaryDirectory()
        let url = backend == .postgres ? URL(string: try StoreBackend.newDatabase())! : URL(fileURLWithPath: directory.file("store.sqlite"))
        _ = try PersistentStoreCoordinator(model: Self.model, url: url)
        var looser = Self.model
        looser.entities[0].attributes[1].rules.maximumLength = 50
        let reopened = try PersistentStoreCoordinator(model: looser, url: url)
        let context = ObjectContext(coordinator: reopened)
        try context.performAndWait {
            let person = context.insert("Person")
            person.id = "p1"
            person.name = "Alexandra"
            try context.save()
        }
    }
}
