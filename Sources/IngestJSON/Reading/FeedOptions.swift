/// Where a feed keeps its records.
public enum FeedShape: Sendable, Hashable, Codable, CustomStringConvertible {
    /// A top-level array of records: `[{…}, {…}]`.
    case array
    /// An array of records under a key path in a top-level object: `features` or `data.items`.
    case keyPath([String])
    /// Newline-delimited JSON: one value per line, blank lines skipped.
    case ndjson
    /// Records that are the values of an object, keyed by their member names: the
    /// object at a key path, or the top-level object when the path is empty
    /// (`{"events": {"138586341": {…}, …}}`). Each record carries its key (`FeedRecord.key`).
    case keyed([String])

    /// Parses `--records-at`'s argument: dot-separated keys, none empty.
    public static func recordsAt(_ path: String) -> FeedShape? {
        let keys = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !keys.isEmpty, !keys.contains(where: \.isEmpty) else { return nil }
        return .keyPath(keys)
    }

    public var description: String {
        switch self {
        case .array: "top-level array"
        case .keyPath(let keys): "array at '\(keys.joined(separator: "."))'"
        case .ndjson: "newline-delimited JSON"
        case .keyed(let keys): keys.isEmpty ? "values of the top-level object" : "values of the object at '\(keys.joined(separator: "."))'"
        }
    }
}

/// How a feed is read: its shape and the limits that keep hostile input from
/// taking the machine's memory.
public struct FeedOptions: Sendable, Hashable, Codable {
    public var shape: FeedShape
    /// Deepest nesting of arrays and objects allowed, counted from the top of the document.
    public var maxDepth: Int
    /// Largest record, in bytes of its JSON text.
    public var maxRecordBytes: Int
    /// Bytes asked of the input per read; memory use does not grow with the feed.
    public var readBufferSize: Int
    /// NDJSON only: a malformed line becomes a refused record (rejected with its line,
    /// column and reason) and the read goes on, instead of stopping the feed.
    public var rejectsMalformedLines = false

    public static let defaultMaxDepth = 512
    public static let defaultMaxRecordBytes = 64 << 20

    public init(
        shape: FeedShape = .array,
        maxDepth: Int = FeedOptions.defaultMaxDepth,
        maxRecordBytes: Int = FeedOptions.defaultMaxRecordBytes,
        readBufferSize: Int = 256 << 10
    ) {
        self.shape = shape
        self.maxDepth = maxDepth
        self.maxRecordBytes = maxRecordBytes
        self.readBufferSize = readBufferSize
    }

    private enum CodingKeys: String, CodingKey {
        case shape, maxDepth, maxRecordBytes, readBufferSize, rejectsMalformedLines
    }

    /// Options recorded before `rejectsMalformedLines` existed read as without it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        shape = try container.decode(FeedShape.self, forKey: .shape)
        maxDepth = try container.decode(Int.self, forKey: .maxDepth)
        maxRecordBytes = try container.decode(Int.self, forKey: .maxRecordBytes)
        readBufferSize = try container.decode(Int.self, forKey: .readBufferSize)
        rejectsMalformedLines = try container.decodeIfPresent(Bool.self, forKey: .rejectsMalformedLines) ?? false
    }
}
