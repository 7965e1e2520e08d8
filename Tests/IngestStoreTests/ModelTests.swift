import Foundation
import Testing
@testable import IngestStore

@Suite struct ModelTests {
    @Test(arguments: [
        (Model(entities: []), "invalid model: the model has no entities"),
        (Model(entities: [Entity("A", attributes: []), Entity("a", attributes: [])]), "invalid model: duplicate entity name 'a'"),
        (Model(entities: [Entity("A", attributes: [Attribute("x", .string), Attribute("x", .int64)])]),
         "invalid model: duplicate property name 'A.x'"),
        (Model(entities: [Entity("A", attributes: [Attribute("_pk", .int64)])]),
         "invalid model: attribute A._pk: names starting with '_' are reserved"),
        (Model(entities: [Entity("A", attributes: [Attribute("n", .int16, default: .int(70_000))])]),
         "invalid model: bad default for A.n: 70000 is not a valid int16"),
        (Model(entities: [Entity("A", attributes: [Attribute("n", .string, default: .bool(true))])]),
         "invalid model: bad default for A.n: true is not a valid string"),
        (Model(entities: [Entity("A", attributes: [], relationships: [Relationship("b", to: "B", inverse: "a")])]),
         "invalid model: relationship A.b has unknown destination 'B'"),
        (Model(entities: [Entity("A", attributes: [], relationships: [Relationship("b", to: "B", inverse: "a")]),
                          Entity("B", attributes: [])]),
         "invalid model: relationship A.b names inverse 'a', which B does not have"),
        (Model(entities: [Entity("A", attributes: [], relationships: [Relationship("b", to: "B", inverse: "a")]),
                          Entity("B", attributes: [], relationships: [Relationship("a", to: "A", inverse: "other")]),
                          ]),
         "invalid model: relationship A.b and its inverse B.a do not point at each other"),
        (Model(entities: [Entity("A", attributes: [Attribute("x", .string)], uniquenessConstraints: [["y"]])]),
         "invalid model: uniqueness constraint on A names 'y', which is not an attribute of A"),
    ])
    func invalidModelsAreRefusedNamingTheProblem(_ model: Model, _ message: String) {
        let error = #expect(throws: ModelError.self) { try model.validated() }
        #expect(error?.description == message)
    }

    @Test func modelRoundTripsThroughJSON() throws {
        let json = TestModel.model.jsonData()
        let loaded = try Model.load(json: json)
        #expect(loaded == TestModel.model)
        #expect(loaded.hash == TestModel.model.hash)
    }

    @Test func modelLoadsFromHandWrittenJSON() throws {
        let json = """
        {"entities": [
          {"name": "Photo", "attributes": [{"name": "id", "type": "string", "optional": false},
                                           {"name": "views", "type": "int64", "default": {"type": "int", "value": 0}}],
           "relationships": [{"name": "whoTook", "destination": "Photographer", "inverse": "photos"}],
           "unique": [["id"]]},
          {"name": "Photographer", "attributes": [{"name": "name", "type": "string", "indexed": true}],
           "relationships": [{"name": "photos", "destination": "Photo", "inverse": "whoTook", "toMany": true, "deleteRule": "cascade"}]}
        ]}
        """
        let model = try Model.load(json: Data(json.utf8))
        #expect(model.entity("Photo")?.attribute("views")?.defaultValue == .int(0))
        #expect(model.entity("Photographer")?.relationship("photos")?.deleteRule == .cascade)
        #expect(model.entity("Photographer")?.attribute("name")?.isIndexed == true)
    }

    @Test func sqlKeywordsQuotesAndUnicodeAreUsableNames() throws {
        let model = Model(entities: [Entity("select", attributes: [
            Attribute("from", .string), Attribute("we\"ird name", .int64), Attribute("größe", .double),
        ], uniquenessConstraints: [["from"]])])
        let (coordinator, directory) = try TestModel.store(model)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let object = context.insert("select")
            object["from"] = "x'); DROP TABLE \"select\"; --"
            object["we\"ird name"] = 7
            object["größe"] = 1.5
            try context.save()
        }
        let reader = ObjectContext(coordinator: coordinator)
        try reader.performAndWait {
            let objects = try reader.fetch("select")
            #expect(objects.count == 1)
            #expect(objects[0]["from"] == "x'); DROP TABLE \"select\"; --")
            #expect(objects[0]["we\"ird name"] == 7)
            #expect(objects[0]["größe"] == 1.5)
        }
    }
}
