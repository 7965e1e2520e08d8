import ArgumentParser
import Foundation
import IngestJSON
import IngestStore

extension Ingest {
    struct Query: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Query any store Ingest writes (the store records its model).",
            discussion: """
            Examples:
              ingest query photos.sqlite Photo --where "views > 100 AND whoTook.name BEGINSWITH[c] 'a'" --sort views:desc --limit 10
              ingest query photos.sqlite Photographer --where "photos.@count > 5" --count
              ingest query photos.sqlite Photo --fields id,title,whoTook.name --format json
              ingest query "postgresql://me@db.example.com/photos" Photo --where "views > 100" --count
            """
        )

        @Argument(help: "The store file, or a postgresql:// URL.")
        var store: String

        @Argument(help: "The entity to query.")
        var entity: String

        @Option(name: .customLong("where"), help: "A predicate in NSPredicate's format.")
        var predicate: String?

        @Option(help: ArgumentHelp("Sort key, ascending, or KEY:desc; repeat for more keys.", valueName: "key[:desc]"))
        var sort: [String] = []

        @Option(help: "At most this many rows.")
        var limit: Int?

        @Option(help: "Skip this many rows first.")
        var offset = 0

        @Flag(help: "Print how many objects match, and nothing else.")
        var count = false

        @Option(help: ArgumentHelp("Comma-separated key paths (default: every attribute).", valueName: "a,b,whoTook.name"))
        var fields: String?

        @Option(help: "table, json or csv.")
        var format: OutputFormat = .table

        enum OutputFormat: String, ExpressibleByArgument, CaseIterable { case table, json, csv }

        func validate() throws {
            if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
            if offset < 0 { throw ValidationError("--offset must be 0 or more") }
            _ = try Self.sortDescriptors(sort)
            if let fields, Self.keys(fields).isEmpty { throw ValidationError("--fields names no key path (give them comma-separated: id,title,whoTook.name)") }
        }

        /// `KEY` or `KEY:asc` or `KEY:desc`, each key non-empty.
        static func sortDescriptors(_ sort: [String]) throws -> [FetchSortDescriptor] {
            try sort.map { text in
                let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                guard !parts[0].isEmpty else { throw ValidationError("--sort '\(text)': the key path is empty (expected KEY, KEY:asc or KEY:desc)") }
                let direction = parts.count < 2 ? "asc" : parts[1].lowercased()
                guard direction == "asc" || direction == "desc" else {
                    throw ValidationError("--sort '\(text)': '\(parts[1])' is no direction (expected asc or desc)")
                }
                return FetchSortDescriptor(parts[0], ascending: direction == "asc")
            }
        }

        static func keys(_ fields: String) -> [String] {
            fields.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }

        func run() throws {
            let coordinator = try PersistentStoreCoordinator(existingStoreAt: store, readOnly: true)
            guard let entityModel = coordinator.model.entity(entity) else {
                throw CommandFailure("\(store) has no entity '\(entity)' (it has: \(coordinator.model.entities.map(\.name).joined(separator: ", ")))")
            }
            let sortDescriptors = try Self.sortDescriptors(sort)
            let request = FetchRequest(entity, predicate: try predicate.map { try QueryPredicate(format: $0) },
                                       sortDescriptors: sortDescriptors, fetchLimit: limit, fetchOffset: offset)
            let context = ObjectContext(coordinator: coordinator, name: "query")
            if count {
                print(try context.performAndWait { try context.count(for: request) })
                return
            }
            let keys = fields.map(Self.keys) ?? entityModel.storedAttributes.map(\.name)
            let rows = try context.performAndWait {
                try context.fetchDictionaries(DictionaryFetch(request, properties: keys.map(FetchProperty.keyPath)))
            }
            // CSV ends every row, the last too, with its own CRLF (RFC 4180).
            print(Self.render(rows, keys: keys, as: format), terminator: format == .csv ? "" : "\n")
        }

        static func render(_ rows: [[String: Value?]], keys: [String], as format: OutputFormat) -> String {
            switch format {
            case .json:
                let objects = rows.map { row in
                    "{" + keys.map { key in jsonString(key) + ":" + json(row[key] ?? nil) }.joined(separator: ",") + "}"
                }
                return "[" + objects.joined(separator: ",\n ") + "]"
            case .csv:
                let lines = [keys.map(csv)] + rows.map { row in keys.map { csv(plain(row[$0] ?? nil, null: "")) } }
                return lines.map { $0.joined(separator: ",") + "\r\n" }.joined()
            case .table:
                let body = rows.map { row in
                    keys.map { key in
                        let text = plain(row[key] ?? nil, null: "NULL")
                        // Foundation's search, on every cell, cost more than the rest of the table.
                        return text.utf8.contains(10) ? text.replacingOccurrences(of: "\n", with: "\\n") : text
                    }
                }
                return Table.render(header: keys, rows: body) + "\n(\(rows.count) row\(rows.count == 1 ? "" : "s"))"
            }
        }

        static func plain(_ value: Value?, null: String) -> String {
            switch value {
            case nil: null
            case .string(let s)?, .decimal(let s)?: s
            case .int(let i)?: String(i)
            case .double(let d)?: String(d)
            case .bool(let b)?: String(b)
            case .date(let d)?: Format.date(d)
            case .binary(let b)?: Data(b).base64EncodedString()
            case .uuid(let u)?: u.uuidString
            }
        }

        static func json(_ value: Value?) -> String {
            switch value {
            case nil: return "null"
            case .int(let i)?: return String(i)
            case .double(let d)?: return d.isFinite ? String(d) : "null"
            case .bool(let b)?: return String(b)
            // Canonical decimal text is a JSON number as it stands; anything else is quoted.
            case .decimal(let s)?: return DecimalText.canonical(s) == s ? s : jsonString(s)
            default: return jsonString(plain(value, null: ""))
            }
        }

        static func jsonString(_ text: String) -> String { JSONValue.string(text).description }

        static func csv(_ field: String) -> String {
            guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return field }
            return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
    }
}
