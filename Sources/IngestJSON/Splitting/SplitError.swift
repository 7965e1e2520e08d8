/// Why a chunk directory cannot be used for this split (the command line adds what to do).
public enum SplitError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The directory holds a split of another feed, or of the same feed with other options.
    case differentFeed(directory: String, reason: String)
    /// Chunk files that no journal or manifest accounts for.
    case unknownChunks(directory: String, count: Int)
    /// The feed gave different records than it did when the split began.
    case feedChanged(directory: String, chunk: String)
    case unreadableState(path: String)
    case invalidOption(String)
    /// The split was cancelled after `chunks` chunks; running it again continues from there.
    case interrupted(directory: String, chunks: Int)
    /// A finished split was to be used without its feed (`SplitOptions.withoutFeed`), and
    /// chunks it lists are missing or changed.
    case chunksMissing(directory: String, files: [String])

    public var description: String {
        switch self {
        case .differentFeed(let directory, let reason):
            "\(directory) holds the split of a different feed (\(reason))"
        case .unknownChunks(let directory, let count):
            "\(directory) holds \(count) chunk file(s) that no split journal or manifest describes"
        case .feedChanged(let directory, let chunk):
            "the feed no longer gives \(chunk) as it did when the split into \(directory) began: the feed changed"
        case .unreadableState(let path):
            "cannot read \(path): it is damaged or not Ingest's"
        case .invalidOption(let text):
            text
        case .interrupted(let directory, let chunks):
            "split into \(directory) stopped after \(chunks) chunk(s); splitting again continues from there"
        case .chunksMissing(let directory, let files):
            "\(directory) lacks \(files.count) chunk file(s) of its finished split, or holds them changed (\(files.prefix(3).joined(separator: ", "))\(files.count > 3 ? ", …" : "")), "
                + "and without the feed they cannot be made again"
        }
    }
}
