#if canImport(Glibc)
import Glibc
#endif

/// Seconds spent per import stage: parse, map and save summed over workers (so with W
/// workers they can add up to W times the wall time), split and index wall time.
public struct StageTimes: Sendable, Equatable, Codable {
    public var split = 0.0
    public var parse = 0.0
    public var map = 0.0
    public var save = 0.0
    /// The part of `save` spent holding the store's write lock (the rest is waiting for
    /// it and looking keys up); the batch path only.
    public var locked = 0.0
    /// Building the secondary indexes at the end (wall time).
    public var index = 0.0
    /// Workers waiting for earlier chunks to be committed (commits go in feed order), summed.
    public var waiting = 0.0

    public init() {}

    private enum CodingKeys: String, CodingKey { case split, parse, map, save, locked, index, waiting }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        split = try container.decode(Double.self, forKey: .split)
        parse = try container.decode(Double.self, forKey: .parse)
        map = try container.decode(Double.self, forKey: .map)
        save = try container.decode(Double.self, forKey: .save)
        locked = try container.decodeIfPresent(Double.self, forKey: .locked) ?? 0
        index = try container.decode(Double.self, forKey: .index)
        waiting = try container.decodeIfPresent(Double.self, forKey: .waiting) ?? 0
    }

    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func + (lhs: StageTimes, rhs: StageTimes) -> StageTimes {
        var sum = lhs
        sum.split += rhs.split
        sum.parse += rhs.parse
        sum.map += rhs.map
        sum.save += rhs.save
        sum.locked += rhs.locked
        sum.index += rhs.index
        sum.waiting += rhs.waiting
        return sum
    }
}

/// Records per second of each stage of a run: its records over the stage's seconds
/// (summed over workers, so a stage's rate is what one worker does per second of it).
public struct StageRates: Sendable, Equatable, Codable {
    public var split: Double
    public var parse: Double
    public var map: Double
    public var save: Double

    public init(_ stages: StageTimes, records: Int) {
        func rate(_ seconds: Double) -> Double { seconds > 0 ? Double(records) / seconds : 0 }
        split = rate(stages.split)
        parse = rate(stages.parse)
        map = rate(stages.map)
        save = rate(stages.save)
    }
}
