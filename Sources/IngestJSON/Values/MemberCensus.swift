/// What records held beyond what an importer reads: the member paths it does not map,
/// with how many records had each, and how many records named a member twice in one
/// object (the last value is the one read). A field that first appears after the
/// inference sample, or that a later feed adds, shows up here instead of vanishing.
public struct MemberCensus: Codable, Sendable, Equatable {
    /// Member paths (`exif`, `photographer.website`) and the records that had each. A
    /// path names the member of an object the pipeline reads into; what lies inside an
    /// unmapped member, or inside an array, is not listed apart.
    public var unmapped: [String: Int] = [:]
    /// Records that named a member twice in one object the pipeline reads into.
    public var repeated = 0

    public init(unmapped: [String: Int] = [:], repeated: Int = 0) {
        self.unmapped = unmapped
        self.repeated = repeated
    }

    public var isEmpty: Bool { unmapped.isEmpty && repeated == 0 }

    /// The paths, most records first (then by name).
    public var ranked: [(path: String, records: Int)] {
        unmapped.map { ($0.key, $0.value) }.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }
    }

    public static func + (lhs: MemberCensus, rhs: MemberCensus) -> MemberCensus {
        MemberCensus(unmapped: lhs.unmapped.merging(rhs.unmapped, uniquingKeysWith: +), repeated: lhs.repeated + rhs.repeated)
    }

    /// The path under which members past `MemberCounter.pathLimit` are counted.
    public static let otherPaths = "(other member paths)"
}

/// Counts, record by record, the members a `JSONCapturePlan` does not read. The plan
/// learns each such key the first time it is met, so later records find it in the scan
/// they make anyway and cost one counter step: the fast path pays nothing for a census.
/// Records the scan does not vouch for are counted from their parsed value instead.
package final class MemberCounter {
    /// Distinct paths counted apart; past it, under `MemberCensus.otherPaths` (a member
    /// whose keys are data, such as ids, must not grow the plan without bound).
    package static let pathLimit = 256

    /// The log a scan fills: pass it to `JSONCapturePlan.capture(_:into:log:)`.
    package let log: UnsafeMutablePointer<CaptureLog>
    // Per counter (at most `pathLimit` + 1): records counted, and the record each last
    // counted (so a repeated member counts its record once). Buffers, not arrays: the
    // fast path tallies every record, and an array in a class pays an exclusivity check
    // per step.
    private let counts: UnsafeMutablePointer<Int>
    private let stamps: UnsafeMutablePointer<Int>
    private var paths: [String] = []
    @exclusivity(unchecked) private var serial = 0
    @exclusivity(unchecked) private var repeated = 0
    @exclusivity(unchecked) private var lastRepeated = 0
    private var otherCounter: Int?

    package init() {
        log = .allocate(capacity: 1)
        log.initialize(to: CaptureLog())
        counts = .allocate(capacity: Self.pathLimit + 1)
        counts.initialize(repeating: 0, count: Self.pathLimit + 1)
        stamps = .allocate(capacity: Self.pathLimit + 1)
        stamps.initialize(repeating: 0, count: Self.pathLimit + 1)
    }

    deinit {
        log.pointee.deallocate()
        log.deallocate()
        counts.deallocate()
        stamps.deallocate()
    }

    /// Counts the record just scanned with `log` (the scan returned true), as far as its
    /// members are known. Returns false when it had members no counter has learned yet:
    /// then `count(scanned:plan:)` counts them, learning them into the plan.
    @inline(__always)
    package func countKnown() -> Bool {
        serial += 1
        var known = true
        for index in 0..<log.pointee.count {
            let counter = log.pointee.member(index).counter
            if counter >= 0 { tally(counter) } else { known = false }
        }
        return known
    }

    /// After `countKnown` returned false: counts the members of `record` it could not,
    /// learning them into `plan` (the plan of the scan).
    package func count(scanned record: UnsafeRawBufferPointer, plan: inout JSONCapturePlan) {
        // Members past the path limit share a counter: a key named twice among them is told
        // by its name (as the parser's count tells it), not by its counter.
        var others: Set<[UInt8]> = []
        for index in 0..<log.pointee.count {
            let member = log.pointee.member(index)
            guard member.counter < 0 else { continue }
            let key = Array(UnsafeRawBufferPointer(rebasing: record[member.offset..<(member.offset + member.length)]))
            let counter = counterOf(key, at: member.node, plan: &plan)
            if counter == otherCounter, !others.insert(withUnsafeBytes(of: member.node) { Array($0) } + key).inserted { markRepeated() }
            tally(counter)
        }
    }

    /// Counts a record the scan did not vouch for, from its parsed value (nothing for a
    /// record that is not JSON: it is rejected, and its reason says why).
    package func count(parsing record: UnsafeRawBufferPointer, plan: inout JSONCapturePlan) {
        guard let value = try? JSONValue.parse(record) else { return }
        serial += 1
        walk(value, node: JSONCapturePlan.root, plan: &plan)
    }

    /// Counts `record` with a plan that captures nothing (`JSONCapturePlan(reading:)`): a
    /// scan of its own, for readers that do not scan with a plan already.
    package func count(_ record: UnsafeRawBufferPointer, plan: inout JSONCapturePlan) {
        if plan.capture(record, into: UnsafeMutableBufferPointer(start: nil, count: 0), log: log) {
            if !countKnown() { count(scanned: record, plan: &plan) }
        } else {
            count(parsing: record, plan: &plan)
        }
    }

    private func walk(_ value: JSONValue, node: Int, plan: inout JSONCapturePlan) {
        guard case .object(let members) = value else { return }
        var names = Set<String>()
        var twice = false
        for member in members {
            if !names.insert(member.key).inserted { twice = true }
            let key = Array(member.key.utf8)
            if let entry = plan.entry(key, at: node), entry.counter < 0 {
                if entry.child >= 0, case .object = member.value { walk(member.value, node: entry.child, plan: &plan) }
                continue
            }
            tally(counterOf(key, at: node, plan: &plan), repeats: false)
        }
        if twice { markRepeated() }
    }

    /// The census of the records counted since the last `take`, and a fresh start.
    package func take() -> MemberCensus {
        var census = MemberCensus(repeated: repeated)
        for index in paths.indices where counts[index] > 0 {
            census.unmapped[paths[index], default: 0] += counts[index]
            counts[index] = 0
        }
        repeated = 0
        return census
    }

    private func markRepeated() {
        guard lastRepeated != serial else { return }
        lastRepeated = serial
        repeated += 1
    }

    @inline(__always)
    private func tally(_ counter: Int, repeats: Bool = true) {
        if stamps[counter] == serial {
            // Members past the path limit share a counter: meeting it twice is no repetition
            // (found by probing: the scan's census counted such records as "named twice").
            if repeats && counter != otherCounter { markRepeated() }
            return
        }
        stamps[counter] = serial
        counts[counter] += 1
    }

    /// The counter of `key` in `node`, learned into the plan the first time it is met.
    private func counterOf(_ key: [UInt8], at node: Int, plan: inout JSONCapturePlan) -> Int {
        if let counter = plan.entry(key, at: node)?.counter, counter >= 0 { return counter }
        guard paths.count < Self.pathLimit else {
            // Past the limit the plan stops growing: these members are looked up record by record.
            if let otherCounter { return otherCounter }
            otherCounter = newCounter(MemberCensus.otherPaths)
            return otherCounter!
        }
        let counter = newCounter(plan.path(of: key, at: node))
        plan.learn(key, at: node, counter: counter)
        return counter
    }

    private func newCounter(_ path: String) -> Int {
        paths.append(path)
        return paths.count - 1
    }
}
