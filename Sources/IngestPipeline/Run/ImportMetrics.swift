import CoreMetrics
import IngestJSON

/// What a run reports through swift-metrics while it goes, to whatever backend the
/// application bootstrapped (`MetricsSystem.bootstrap`) or handed to the importer
/// (`Importer.Options.metrics`); with neither, nothing is recorded. Counters count from the
/// start of the process (as Prometheus expects of a counter), so a process that runs
/// several imports adds them up; the `store` dimension tells SQLite runs from PostgreSQL ones.
///
/// The metrics (names as a Prometheus backend shows them):
/// - `ingest_records_total{outcome="imported"|"rejected"}`: records committed by each save;
/// - `ingest_objects_total{entity, outcome="inserted"|"updated"|"unchanged"}`: what each
///   imported record did to its own object (the pipeline's entity);
/// - `ingest_chunks_total{state="split"|"done"}`, `ingest_feed_bytes_total`: the split's
///   chunks and the bytes they hold, and the chunks this process finished importing;
/// - `ingest_save_duration_seconds`: a timer (histogram) per save;
/// - `ingest_stage_seconds_total{stage}`: seconds per stage summed over workers (`parse`,
///   `map`, `save`, `locked` holding the store's write lock, `waiting` for the chunk's turn
///   to commit, as `StageTimes` counts them; the object path adds its `map` and `save` when
///   its worker ends);
/// - `ingest_save_retries_total`, `ingest_leases_lost_total`: saves rolled back and
///   tried again, chunks another process took over.
final class ImportMetrics: Sendable {
    enum Stage: String, CaseIterable {
        case parse, map, save, locked, waiting
    }

    private let imported: Counter
    private let rejected: Counter
    private let inserted: Counter
    private let updated: Counter
    private let unchanged: Counter
    private let chunksSplit: Counter
    private let chunksDone: Counter
    private let feedBytes: Counter
    private let saveDuration: CoreMetrics.Timer
    private let stages: [FloatingPointCounter]
    private let retries: Counter
    private let leasesLost: Counter

    /// - Parameters:
    ///   - store: `sqlite` or `postgresql`.
    ///   - entity: the pipeline's entity, whose objects the outcomes count.
    ///   - factory: the backend; nil for the one bootstrapped in `MetricsSystem`.
    @_optimize(none)
    init(store: String, entity: String, factory: (any MetricsFactory)?) {
        let factory = factory ?? MetricsSystem.factory
        let base = [("store", store)]
        func counter(_ label: String, _ more: [(String, String)] = []) -> Counter {
            Counter(label: label, dimensions: base + more, factory: factory)
        }
        imported = counter("ingest_records_total", [("outcome", "imported")])
        rejected = counter("ingest_records_total", [("outcome", "rejected")])
        inserted = counter("ingest_objects_total", [("entity", entity), ("outcome", "inserted")])
        updated = counter("ingest_objects_total", [("entity", entity), ("outcome", "updated")])
        unchanged = counter("ingest_objects_total", [("entity", entity), ("outcome", "unchanged")])
        chunksSplit = counter("ingest_chunks_total", [("state", "split")])
        chunksDone = counter("ingest_chunks_total", [("state", "done")])
        feedBytes = counter("ingest_feed_bytes_total")
        saveDuration = CoreMetrics.Timer(label: "ingest_save_duration_seconds", dimensions: base, factory: factory)
        stages = Stage.allCases.map {
            FloatingPointCounter(label: "ingest_stage_seconds_total", dimensions: base + [("stage", $0.rawValue)], factory: factory)
        }
        retries = counter("ingest_save_retries_total")
        leasesLost = counter("ingest_leases_lost_total")
    }

    /// A save committed `result` (either path, either store).
    func saved(_ result: ImportWorker.ChunkResult) {
        if result.imported > 0 { imported.increment(by: result.imported) }
        if result.rejected > 0 { rejected.increment(by: result.rejected) }
        let outcomes = result.outcomes
        if outcomes.inserted > 0 { inserted.increment(by: outcomes.inserted) }
        if outcomes.updated > 0 { updated.increment(by: outcomes.updated) }
        if outcomes.unchanged > 0 { unchanged.increment(by: outcomes.unchanged) }
        if result.seconds > 0 { saveDuration.recordNanoseconds(Int64(result.seconds * 1e9)) }
    }

    /// The split offered `chunk` (made now, or found made by an earlier split of the run).
    func split(_ chunk: ChunkInfo) {
        chunksSplit.increment()
        feedBytes.increment(by: chunk.byteSize)
    }

    func chunkDone() { chunksDone.increment() }

    func add(_ seconds: Double, to stage: Stage) {
        guard seconds > 0, let index = Stage.allCases.firstIndex(of: stage) else { return }
        stages[index].increment(by: seconds)
    }

    /// Stage times counted in one go (the object path's, when its worker ends).
    func add(_ times: StageTimes, _ only: [Stage]) {
        for stage in only {
            switch stage {
            case .parse: add(times.parse, to: .parse)
            case .map: add(times.map, to: .map)
            case .save: add(times.save, to: .save)
            case .locked: add(times.locked, to: .locked)
            case .waiting: add(times.waiting, to: .waiting)
            }
        }
    }

    func retried(_ count: Int) { if count > 0 { retries.increment(by: count) } }
    func leaseLost() { leasesLost.increment() }
}
