import Synchronization

/// What PostgreSQL batch writers remember of stored objects others link to, by entity and
/// key (`PostgresBatchWriter.Known`: the row number, a hash of the fields last written),
/// shared by the writers one process runs for one import run. The run's saves commit one
/// after another in feed order, so what one writer's commit taught holds for the next save,
/// whichever worker makes it. Each worker kept its own before: after the other worker's
/// commit it looked up every related object the other had made, and staged and compared on
/// the server every one it knew, unchanged or not (with 2 workers on `Pipelines/photos.json`,
/// 109,000 staged rows and 720 ms of `UPDATE` on the server, against none with 1).
///
/// Every writer sharing it must write the same model; a writer's uncommitted knowledge stays
/// its own (`PostgresBatchWriter.pending`) until its transaction commits.
package final class PostgresKnownObjects: Sendable {
    private struct State {
        var known: [[TextKey: PostgresBatchWriter.Known]] = []
        var generation: UInt32 = 0
        /// The history position of the last commit that taught something here, when the
        /// saves are in the history.
        var position: Int64?
    }

    private let state = Mutex(State())

    package init() {}

    /// Bumped by `othersWrote`: fields remembered from before are not trusted.
    var generation: UInt32 { state.withLock { $0.generation } }

    /// Writers outside those sharing this may have changed stored objects: the row numbers
    /// remembered hold (a key keeps its row), the fields do not.
    func othersWrote() {
        state.withLock { $0.generation &+= 1 }
    }

    /// The history position of the last commit merged here (nil: none, or no history).
    var position: Int64? { state.withLock { $0.position } }

    /// Forgets the objects whose rows are `changed` (by entity), which other writers updated
    /// or deleted: they are looked up again. What else is remembered stays trusted.
    func forget(_ changed: [Int: Set<Int64>]) {
        state.withLock { state in
            for (entity, rows) in changed where entity < state.known.count && !rows.isEmpty {
                // Removed in place: a filtered copy would rebuild a memory of up to `knownLimit`
                // objects at every other process's commit, for the few it changed.
                let gone = state.known[entity].compactMap { rows.contains($0.value.pk) ? $0.key : nil }
                for key in gone { state.known[entity].removeValue(forKey: key) }
            }
        }
    }

    /// `body` with what is remembered of `entity`'s objects, under the lock (keep it short).
    func withKnown<T>(_ entity: Int, _ body: ([TextKey: PostgresBatchWriter.Known]) -> T) -> T {
        state.withLock { state in
            entity < state.known.count ? body(state.known[entity]) : body([:])
        }
    }

    /// A writer's transaction committed: what it taught (`pending`, by entity) holds from now
    /// on. An entity's memory past `limit` objects starts again empty.
    func merge(_ pending: [[TextKey: PostgresBatchWriter.Known]], limit: Int, position: Int64?) {
        state.withLock { state in
            // A commit without one leaves the one before: an earlier position only makes
            // `forget` read more of the history than it needs.
            if let position { state.position = max(position, state.position ?? position) }
            if state.known.count < pending.count {
                state.known += Array(repeating: [:], count: pending.count - state.known.count)
            }
            for entity in pending.indices where !pending[entity].isEmpty {
                if state.known[entity].count + pending[entity].count > limit {
                    state.known[entity].removeAll(keepingCapacity: true)
                }
                state.known[entity].merge(pending[entity]) { $1 }
            }
        }
    }
}
