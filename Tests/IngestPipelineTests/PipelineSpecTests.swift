import Foundation
import IngestJSON
import IngestStore
import Testing
@testable import IngestPipeline

@Suite struct PipelineSpecTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func theDemoPipelineLoads() throws {
        let spec = try PipelineSpec.load(path: Self.root.appendingPathComponent("Pipelines/photos.json").path)
        #expect(spec.recordEntity == "Photo")
        #expect(spec.feed == .array)
        #expect(spec.chunkSize == 5000 && spec.saveEvery == 1000 && spec.workers == nil)
        let photo = try #require(spec.mappings["Photo"])
        #expect(photo.key == ["id"])
        #expect(photo.attributes.first { $0.attribute == "uploadDate" }?.dates == [.iso8601, .unixSeconds])
        #expect(photo.attributes.first { $0.attribute == "views" }?.defaultValue == .int(0))
        #expect(photo.attributes.first { $0.attribute == "tags" }?.asJSON == true)
        #expect(photo.relationships == [.init(relationship: "whoTook", from: JSONPath(keys: ["photographer"]))])
        #expect(spec.mappings["Photographer"]?.key == ["id"])
        #expect(spec.hash.count == 64)
    }

    func error(_ json: String) -> String? {
        do {
            _ = try PipelineSpec.parse(Array(json.utf8))
            return nil
        } catch let error as PipelineError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    static let model = #"{"entities": [{"name": "Photo", "attributes": [{"name": "id", "type": "string"}, {"name": "views", "type": "int64"}], "relationships": [{"name": "whoTook", "destination": "Person", "inverse": "photos"}], "unique": [["id"]]}, {"name": "Person", "attributes": [{"name": "name", "type": "string"}], "relationships": [{"name": "photos", "destination": "Photo", "inverse": "whoTook", "toMany": true}]}]}"#

    @Test func mistakesAreNamedWithTheirPlace() {
        let m = Self.model
        #expect(error("{") == "not valid JSON: malformed JSON: premature EOF at line 1, column 2 (byte 1)")
        #expect(error(#"{"model": \#(m), "record": "Photo", "mappings": {"Photo": {}}, "extra": 1}"#)
            == "pipeline: unknown field 'extra' (expected feed, import, mappings, model, record)")
        #expect(error(#"{"model": \#(m), "mappings": {}}"#) == "pipeline: missing field 'record'")
        #expect(error(#"{"model": \#(m), "record": "Nope", "mappings": {}}"#) == "pipeline.record: the model has no entity 'Nope'")
        #expect(error(#"{"model": \#(m), "record": "Photo", "mappings": {"Photo": {"attributes": {"views": {"form": "views"}}}}}"#)
            == "pipeline.mappings.Photo.attributes.views: unknown field 'form' (expected case, dates, default, from, json, map, otherwise, required, timeZone, trim, value)")
        #expect(error(#"{"model": \#(m), "record": "Photo", "mappings": {"Photo": {"attributes": {"view": "views"}}}}"#)
            == "pipeline.mappings.Photo.attributes.view: Photo has no attribute 'view'")
        #expect(error(#"{"model": \#(m), "record": "Photo", "mappings": {"Photo": {"attributes": {"views": {"from": "v", "default": "many"}}}}}"#)
            == "pipeline.mappings.Photo.attributes.views.default: \"many\" is not an integer for int64")
        #expect(error(#"{"model": {"entities": [{"name": "P", "attributes": [{"name": "n", "type": "int16"}]}]}, "record": "P", "mappings": {"P": {"attributes": {"n": {"from": "n", "default": 40000}}}}}"#)
            == "pipeline.mappings.P.attributes.n.default: 40000 is out of range for int16")
        #expect(error(#"{"model": \#(m), "record": "Photo", "mappings": {"Photo": {"attributes": {"views": {"from": "v", "dates": ["julian"]}}}}}"#)
            == "pipeline.mappings.Photo.attributes.views.dates: unknown date format 'julian' (expected iso8601, unix, unixMillis or pattern:…)")
        #expect(error(#"{"model": \#(m), "record": "Photo", "mappings": {"Photo": {"relationships": {"whoTook": "person"}}}}"#)
            == "pipeline.mappings.Photo.relationships.whoTook: Person has no mapping")
        #expect(error(#"{"model": \#(m), "record": "Photo", "mappings": {"Photo": {"relationships": {"whoTook": "person"}}, "Person": {}}}"#)
            == "pipeline.mappings.Person: related objects are found or created by key, and Person has none (add \"key\" or a uniqueness constraint)")
        #expect(error(#"{"model": \#(m), "record": "Photo", "mappings": {"Photo": {}}, "import": {"workers": 0}}"#)
            == "pipeline.import.workers: expected a whole number greater than 0")
        #expect(error(#"{"model": {"entities": []}, "record": "Photo", "mappings": {}}"#)
            == "pipeline.model: the model has no entities")
        // A typo in the model dropped what it meant without a word (a uniqueness constraint, optional: false, an index).
        func modelError(_ model: String) -> String? { error(#"{"model": \#(model), "record": "P", "mappings": {"P": {}}}"#) }
        #expect(modelError(#"{"entities": [{"name": "P", "attributes": [{"name": "id", "type": "string"}], "uniqe": [["id"]]}]}"#)
            == "pipeline.model: entities[0].uniqe: unknown field 'uniqe' (expected name, parent, abstract, attributes, relationships, unique)")
        #expect(modelError(#"{"entities": [{"name": "P", "attributes": [{"name": "id", "type": "string", "optinal": false}]}]}"#)
            == "pipeline.model: entities[0].attributes[0].optinal: unknown field 'optinal' (expected name, type, optional, default, indexed, transient, min, max, minLength, maxLength, pattern)")
        #expect(modelError(#"{"entities": [{"name": "P", "attributes": [{"name": "id", "type": "string"}], "relationships": [{"name": "q", "destination": "P", "inverse": "q", "tomany": true}]}]}"#)
            == "pipeline.model: entities[0].relationships[0].tomany: unknown field 'tomany' (expected name, destination, inverse, toMany, ordered, deleteRule)")
        #expect(modelError(#"{"entities": [{"name": "P", "attributes": [{"name": "id", "type": "string"}]}], "version": 2}"#)
            == "pipeline.model: version: unknown field 'version' (expected entities)")
        // A pipeline a store kept (a PostgreSQL run's) is read as the version that kept it did.
        let kept = #"{"model": {"entities": [{"name": "P", "attributes": [{"name": "id", "type": "string"}], "uniqe": [["id"]]}]}, "record": "P", "mappings": {"P": {}}}"#
        #expect((try? PipelineSpec.parse(Array(kept.utf8), strict: false))?.model.entities.first?.uniquenessConstraints == [])
        #expect(error(#"{"model": \#(m), "feed": {"recordsAt": "a", "ndjson": true}, "record": "Photo", "mappings": {"Photo": {}}}"#)
            == "pipeline.feed: recordsAt and ndjson exclude each other")
    }

    @Test func keysCanBeGivenForEntitiesWithoutConstraints() throws {
        let m = Self.model
        let spec = try PipelineSpec.parse(Array(#"{"model": \#(m), "feed": {"recordsAt": "data.items"}, "record": "Photo", "mappings": {"Photo": {"relationships": {"whoTook": "person"}}, "Person": {"key": ["name"], "attributes": {"name": "name"}}}}"#.utf8))
        #expect(spec.mappings["Person"]?.key == ["name"])
        #expect(spec.feed == .keyPath(["data", "items"]))
    }

    @Test func anAbstractEntitysMappingIsRefusedNamingItsSubentities() {
        let json = #"""
            {"model": {"entities": [
                {"name": "Media", "abstract": true, "attributes": [{"name": "id", "type": "string"}], "unique": [["id"]]},
                {"name": "Photo", "parent": "Media", "attributes": [{"name": "width", "type": "int64"}]},
                {"name": "Video", "parent": "Media", "attributes": [{"name": "duration", "type": "double"}]}]},
             "record": "Media", "mappings": {"Media": {"attributes": {"id": "id"}}}}
            """#
        #expect(throws: PipelineError.self) { try PipelineSpec.parse(Array(json.utf8)) }
        do {
            _ = try PipelineSpec.parse(Array(json.utf8))
        } catch {
            #expect("\(error)".hasSuffix(#"pipeline.mappings.Media: Media is abstract, so no record becomes one: map its subentities (Photo, Video) and choose among them with "record": {"by": …}"#), "\(error)")
        }
    }
}
