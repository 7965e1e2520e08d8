import Foundation
import IngestJSON
import IngestStore

/// Rejected records made ready to be imported again, as a new run of their store
/// (`ingest replay`): read from a rejects file (as the user fixed them) or from the store,
/// each checked against the store's rejects, with the pipeline that imports them.
///
/// A record's text is imported as it stands in the file, one NDJSON line each (the chunk
/// line the split made of it: a keyed record's name is its `@key` member, a row its
/// columns), so the replay's pipeline is the original's with its feed made NDJSON. When the
/// run finishes, the rejects it replayed leave the store's rejects in the same transaction
/// as its record: each record is then either imported or a reject of the replay's run, whose
/// line in the rejects file names where it first came from (`replayOf`).
public struct Replay: Sendable {
    /// A record's place: its run, its chunk, its index in the chunk, its number in the feed
    /// (both counted from 0, as the rejects file counts them).
    public struct Position: Codable, Sendable, Hashable {
        public var run: Int
        public var chunk: Int
        public var index: Int
        public var record: Int

        public init(run: Int, chunk: Int, index: Int, record: Int) {
            (self.run, self.chunk, self.index, self.record) = (run, chunk, index, record)
        }
    }

    /// What a replay's run records of each of its records (in the order of its feed): the
    /// reject it replays and where the record first came from.
    public struct Link: Codable, Sendable, Equatable {
        /// The reject this record replays: removed from the store's rejects when the run finishes.
        public var source: Position
        /// The run, chunk and index the record first came from (a record replayed again keeps its first).
        public var origin: Position
    }

    /// One rejected record to import again.
    public struct Record: Sendable, Equatable {
        public var link: Link
        /// The record's JSON text, as the rejects file (or the store) holds it.
        public var text: String
    }

    /// The records, in the order they are imported.
    public let records: [Record]
    /// The pipeline they are imported with: the original's (or the one given), its feed NDJSON.
    public let pipeline: [UInt8]
    /// The runs the records first came from.
    public var originRuns: [Int] { Array(Set(records.map(\.link.origin.run))).sorted() }

    /// The feed shape of a replay: one record a line, a line that is not one JSON value
    /// rejected again as a record (so every line stays one record, in its link's place).
    static let feedMember = JSONMember("feed", .object([JSONMember("ndjson", .bool(true)), JSONMember("malformedLines", .string("reject"))]))

    /// The records of `rejectsFile` (nil: the store's rejects: a SQLite store's
    /// `STORE.rejects.ndjson`, a PostgreSQL store's `_ingest_rejects`), checked against the
    /// store's rejects, and the pipeline that imports them: `pipelinePath`'s, else the one
    /// the records' runs recorded.
    /// - Throws: `ImportError` for a line that is not a reject of this store (or repeats
    ///   one), a store whose last run is unfinished, runs of different pipelines without
    ///   `pipelinePath`, or no record to replay; `PipelineError`; `IOError`; `StoreError`;
    ///   `PostgresError`.
    public static func load(store: String, rejectsFile: String? = nil, pipelinePath: String? = nil) throws -> Replay {
        let book: any ReplayBook = PostgresURL.isPostgres(store) ? try PostgresReplayBook(url: PostgresURL(store)) : try SQLiteReplayBook(path: store)
        if let run = try book.unfinishedRun() {
            throw ImportError("\(store): run \(run.number) has not finished\(run.isReplay ? " (it replays rejects)" : ""): finish it first (ingest resume \(ShellWord.quoted(store))), then replay")
        }
        let stored = try book.rejects()
        let lines: [(line: Int, position: Position, text: String)]
        let file = rejectsFile ?? book.defaultRejectsFile
        if let file {
            lines = try readRejectsFile(file)
        } else {
            lines = stored.sorted { ($0.key.run, $0.key.record) < ($1.key.run, $1.key.record) }.enumerated().map { ($0.offset + 1, $0.element.key, $0.element.value) }
        }
        var seen: [Position: Int] = [:]
        var links: [Int: [Link]] = [:]
        var records: [Record] = []
        for (line, position, text) in lines {
            let place = file.map { "\($0), line \(line)" } ?? store
            guard stored[position] != nil else {
                throw ImportError("\(place): run \(position.run), chunk \(position.chunk), index \(position.index) is not among \(store)'s rejects (replayed already, or a line of another store's rejects file): remove the line")
            }
            if let earlier = seen.updateValue(line, forKey: position) {
                throw ImportError("\(place): the same reject as line \(earlier) (run \(position.run), chunk \(position.chunk), index \(position.index)): keep one of the two")
            }
            guard text.contains(where: { !$0.isWhitespace }) else {
                throw ImportError("\(place): the record's text is empty: give the record, or remove the line to leave it rejected")
            }
            if links[position.run] == nil { links[position.run] = try book.links(run: position.run) ?? [] }
            let runLinks = links[position.run]!
            // A reject of an earlier replay came from where that replay's record came from.
            let origin = runLinks.indices.contains(position.record) ? runLinks[position.record].origin : position
            records.append(Record(link: Link(source: position, origin: origin), text: text))
        }
        guard !records.isEmpty else {
            throw ImportError("\(file ?? store): no rejected record to replay")
        }
        let pipelineText: [UInt8]
        if let pipelinePath {
            pipelineText = try PipelineSpec.resolvedText(path: pipelinePath)
        } else {
            let origins = Set(records.map(\.link.origin.run)).sorted()
            let pipelines = try book.pipelines(runs: origins)
            guard let first = pipelines.first, pipelines.allSatisfy({ $0.text == first.text }) else {
                let named = pipelines.map { "run \($0.run): \($0.name)" }.joined(separator: "; ")
                throw ImportError("\(store): the records come from runs of different pipelines (\(named)): give the one to replay them with, --pipeline FILE")
            }
            pipelineText = first.text
        }
        return Replay(records: records, pipeline: try replayPipeline(pipelineText))
    }

    /// `text` (a pipeline file's) with its feed made NDJSON, the rest as it was.
    /// - Throws: `PipelineError` when the text is not a pipeline.
    @_optimize(none)
    static func replayPipeline(_ text: [UInt8]) throws -> [UInt8] {
        _ = try PipelineSpec.parse(text)
        guard case .object(let members) = try JSONValue.parse(text) else { throw PipelineError(at: "pipeline", "not a JSON object") }
        var replaced = members.filter { $0.key != "feed" }
        replaced.insert(feedMember, at: min(1, replaced.count))
        let result = Array(JSONValue.object(replaced).description.utf8)
        _ = try PipelineSpec.parse(result)
        return result
    }

    /// The lines of a rejects file: each reject's place and text.
    /// - Throws: `ImportError` naming the line that is not a reject; `IOError`.
    static func readRejectsFile(_ path: String) throws -> [(line: Int, position: Position, text: String)] {
        let bytes = try FileOps.readFile(path)
        var result: [(Int, Position, String)] = []
        for (offset, line) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let lineNumber = offset + 1
            guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { continue }
            func bad(_ why: String) -> ImportError {
                ImportError("\(path), line \(lineNumber): \(why); a rejects file holds one reject a line, as Ingest writes it ({\"run\":1,\"chunk\":1,\"index\":0,\"record\":0,\"reason\":…,\"text\":…})")
            }
            let value: JSONValue
            do {
                value = try JSONValue.parse(Array(line))
            } catch {
                throw bad("not JSON (\(error))")
            }
            func number(_ key: String, least: Int) throws -> Int {
                guard let value = value[key]?.int64Value, value >= least, value <= Int64(Int32.max) else {
                    throw bad("\"\(key)\" is \(value[key].map(\.description) ?? "missing"), not a whole number from \(least)")
                }
                return Int(value)
            }
            guard case .object = value else { throw bad("not a JSON object") }
            let position = Position(run: try number("run", least: 1), chunk: try number("chunk", least: 1),
                                    index: try number("index", least: 0), record: try number("record", least: 0))
            guard let text = value["text"]?.stringValue else {
                throw bad("\"text\" is \(value["text"].map(\.description) ?? "missing"), not the record's text as a JSON string")
            }
            result.append((lineNumber, position, text))
        }
        return result
    }

    /// The replay's feed: each record's text on a line of its own (a line break inside a text
    /// can only be JSON whitespace, or make the line malformed either way: it becomes a space).
    var feedBytes: [UInt8] {
        var bytes: [UInt8] = []
        for record in records {
            bytes += record.text.utf8.map { $0 == 0x0A || $0 == 0x0D ? 0x20 : $0 }
            bytes.append(0x0A)
        }
        return bytes
    }

    /// The metadata key under which a replay's run keeps its links (a JSON array, in the
    /// order of its feed), in a SQLite store's metadata and a PostgreSQL store's `_ingest_metadata`.
    static func linksKey(run: Int) -> String { ImportMarker.Keys(run: run).prefix + "replay" }

    /// Writes the store's rejects (every run's, oldest first, as the rejects file holds them)
    /// to `path`, a new file; returns how many.
    /// - Throws: `IOError` when `path` exists or cannot be written; `StoreError`; `PostgresError`.
    public static func export(store: String, to path: String) throws -> Int {
        let book: any ReplayBook = PostgresURL.isPostgres(store) ? try PostgresReplayBook(url: PostgresURL(store)) : try SQLiteReplayBook(path: store)
        let lines = try book.rejectLines()
        try FileOps.createNew(Array(lines.map { $0 + "\n" }.joined().utf8), at: path)
        return lines.count
    }
}

/// A rejects file's line: the reject's place, why, its text, and for a record a replay
/// rejected again, where it first came from.
func rejectFileLine(run: Int, _ reject: ImportMarker.Reject, origin: Replay.Position?) -> String {
    var members = [
        JSONMember("run", .number(String(run))),
        JSONMember("chunk", .number(String(reject.chunk))), JSONMember("index", .number(String(reject.index))),
        JSONMember("record", .number(String(reject.record))), JSONMember("reason", .string(reject.reason)),
        JSONMember("text", .string(reject.text)),
    ]
    if let origin {
        members.append(JSONMember("replayOf", .object([
            JSONMember("run", .number(String(origin.run))), JSONMember("chunk", .number(String(origin.chunk))),
            JSONMember("index", .number(String(origin.index))), JSONMember("record", .number(String(origin.record))),
        ])))
    }
    return JSONValue.object(members).description
}
