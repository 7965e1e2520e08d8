import Foundation
import IngestPipeline

/// The bench's pipeline, `Pipelines/bench-photos.json`, built in so that `ingest bench`
/// runs from any directory (a test keeps the two the same).
enum BenchPipeline {
    static let text = #"""
{
  "model": {
    "entities": [
      {
        "name": "Photo",
        "attributes": [
          { "name": "id", "type": "string", "optional": false },
          { "name": "title", "type": "string" },
          { "name": "subtitle", "type": "string" },
          { "name": "photoURL", "type": "string" },
          { "name": "thumbnailURL", "type": "string" },
          { "name": "uploadDate", "type": "string" },
          { "name": "views", "type": "int64" },
          { "name": "latitude", "type": "double" },
          { "name": "longitude", "type": "double" }
        ],
        "relationships": [
          { "name": "whoTook", "destination": "Photographer", "inverse": "photos" }
        ],
        "unique": [["id"]]
      },
      {
        "name": "Photographer",
        "attributes": [
          { "name": "id", "type": "string", "optional": false },
          { "name": "name", "type": "string" }
        ],
        "relationships": [
          { "name": "photos", "destination": "Photo", "inverse": "whoTook", "toMany": true, "deleteRule": "nullify" }
        ],
        "unique": [["id"]]
      }
    ]
  },
  "feed": {},
  "record": "Photo",
  "mappings": {
    "Photo": {
      "attributes": {
        "id": "id",
        "title": "title",
        "subtitle": "subtitle",
        "photoURL": "photoURL",
        "thumbnailURL": "thumbnailURL",
        "uploadDate": "uploadDate",
        "views": "views",
        "latitude": "latitude",
        "longitude": "longitude"
      },
      "relationships": {
        "whoTook": { "from": "photographer" }
      }
    },
    "Photographer": {
      "attributes": { "id": "id", "name": "name" }
    }
  },
  "import": { "chunkSize": 5000, "saveEvery": 5000 }
}
"""#

    /// The pipeline's file: `given`, or the built-in one written into `directory`.
    static func path(_ given: String?, in directory: String) throws -> String {
        if let given { return given }
        let path = directory + "/bench-photos.json"
        try FileOpsCLI.write(text + "\n", to: path)
        return path
    }

    /// A copy of the pipeline at `path` with history turned off (`"import": {"history": false}`),
    /// written beside the bench's files: the bench's second import of each kind.
    static func withoutHistory(_ path: String, in directory: String) throws -> String {
        // A model file the pipeline names goes in with it: the copy is in another directory.
        let data = Data(try PipelineSpec.resolvedText(path: path))
        guard var root = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw CommandFailure("\(path): the pipeline is not a JSON object")
        }
        var options = root["import"] as? [String: Any] ?? [:]
        options["history"] = false
        root["import"] = options
        let copy = directory + "/" + URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent + "-no-history.json"
        try FileOpsCLI.write(String(decoding: try JSONSerialization.data(withJSONObject: root, options: [.prettyPrinted, .sortedKeys]), as: UTF8.self), to: copy)
        return copy
    }
}
