/// The split's running state, which its callbacks share. A class whose fields skip the
/// runtime's exclusivity bookkeeping rather than locals the callbacks capture: those are
/// checked at every access, a few hundred instructions a record. Used by the splitting
/// thread only.
final class SplitCursor {
    @exclusivity(unchecked) var block: [UInt8]
    @exclusivity(unchecked) var chunkIndex = 0
    @exclusivity(unchecked) var inChunk = 0
    @exclusivity(unchecked) var bytesRead = 0
    @exclusivity(unchecked) var recordsSeen = 0
    @exclusivity(unchecked) var refused = 0
    /// The feed's checksum so far, of every byte read.
    @exclusivity(unchecked) var feedHasher = Checksum()

    init(block: [UInt8]) { self.block = block }
}
