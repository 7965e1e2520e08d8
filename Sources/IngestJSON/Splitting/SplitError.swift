/// Why a chunk directory cannot be used for this split. Each message says what to do.
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

    public var description: String {
        switch self {
        case .differentFeed(let directory, let reason):
            "\(directory) holds the split of a different feed (\(reason)); choose another --out directory, or pass --force to split this feed into it from the start"
        case .unknownChunks(let directory, let count):
            "\(directory) holds \(count) chunk file(s) that no split journal or manifest describes; choose another --out directory, or pass --force to replace them"
        case .feedChanged(let directory, let chunk):
            "the feed no longer gives \(chunk) as it did when the split into \(directory) began: the feed changed; pass --force to split it again from the start"
        case .unreadableState(let path):
            "cannot read \(path): it is damaged or not Ingest's; pass --force to split again from the start"
        case .invalidOption(let text):
            text
        case .interrupted(let directory, let chunks):
            "split into \(directory) stopped after \(chunks) chunk(s); run the same command again to continue"
        }
    }
}
